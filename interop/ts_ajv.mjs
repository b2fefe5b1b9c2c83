// Compiles JSON schemas with the validators MCP hosts use: the TypeScript
// SDK's own `AjvJsonSchemaValidator`, a default Ajv (draft-07, which checks
// a schema against its metaschema) and Ajv2020, the last two with unknown
// formats and keywords allowed. Reads a JSON list of {name, schema} on
// standard input; prints a JSON list of {name, sdk, ajv, ajv2020}, each
// `null` when the schema compiled or the error's message. Through
// scripts/install/mcp-ts-client.sh ajv.
import { createRequire } from "node:module";

const require = createRequire(`${process.env.TS_SDK_DIR}/package.json`);
const sdkValidation = require.resolve("@modelcontextprotocol/sdk/validation/ajv");
const { AjvJsonSchemaValidator } = await import(sdkValidation);
const sdkRequire = createRequire(sdkValidation);
const Ajv = sdkRequire("ajv").default;
const Ajv2020 = sdkRequire("ajv/dist/2020").default;

const compile = (fn) => {
  try {
    fn();
    return null;
  } catch (error) {
    return String(error.message ?? error);
  }
};

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map(({ name, schema }) => ({
  name,
  sdk: compile(() => new AjvJsonSchemaValidator().getValidator(schema)),
  ajv: compile(() => new Ajv({ strict: false }).compile(schema)),
  ajv2020: compile(() => new Ajv2020({ strict: false }).compile(schema)),
}));
console.log(JSON.stringify(results));
