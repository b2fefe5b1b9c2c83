"""A TCP forwarder: accepts on HOST:PORT and relays each connection, both
ways, to TARGET_HOST:TARGET_PORT; prints `forwarding` once it listens.

    python3 forward.py HOST PORT TARGET_HOST TARGET_PORT

tests/broker/partition.rs runs two, one in a network namespace of its own,
so that a service in that namespace reaches the broker over a veth link the
test can take down."""

import asyncio
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(host, port, target_host, target_port):
    async def relay(client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))

    server = await asyncio.start_server(relay, host, port)
    print("forwarding", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    host, port, target_host, target_port = sys.argv[1:]
    asyncio.run(main(host, int(port), target_host, int(target_port)))
