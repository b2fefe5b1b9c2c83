"""Plots of the benchmark figures, as SVG beside the tables of BENCHMARKS.md.

Reads the JSON the bench scripts write and draws bench/plots/*.svg from it:

  pulsar-load.svg     bench/results.json: throughput and CPU per request
                      against requests in flight, ours, the hand-written
                      `pulsar` loop and TrustGraph's Python service
  pulsar-latency.svg  bench/results.json: p50 and p99 at each load
  paired-ratios.svg   bench/paired.json: ours, the Java client loop and the
                      earlier build, each ÷ the loop of the same round, with
                      the loop ÷ itself (the noise floor) as a band
  paired-absolute.svg bench/paired.json: throughput and CPU per request
  paired-latency.svg  bench/paired.json: p50 and p99
  mcp-ratios.svg      bench/mcp.json: ours ÷ rmcp by transport, with rmcp ÷
                      itself as the noise floor
  mcp-absolute.svg    bench/mcp.json: calls/s and server CPU per call of
                      every server, the Python SDK's too
  mcp-latency.svg     bench/mcp.json: p50 and p99

Standard library only (the bench environment has no plotting library), and
deterministic: the same JSON gives byte-identical SVG, so a re-run changes
no file whose figures did not change. The bench scripts call `write()` where
they write their JSON; by hand:

  python3 bench/plots.py           redraw bench/plots/ from bench/*.json
  python3 bench/plots.py --check   redraw into a temporary directory and
                                   fail if bench/plots/ differs from it
  python3 bench/plots.py --out DIR redraw into DIR
"""

import argparse
import json
import math
import pathlib
import sys
import tempfile
from xml.sax.saxutils import escape, quoteattr

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
OUT = BENCH / "plots"
# BENCHMARKS.md is at the root: its image links are relative to it.
LINK_DIR = "bench/plots"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
WIDTH = 960
INK = "#222222"
MUTED = "#555555"
GRID = "#e4e4e4"
BAND = "#e2e2e2"
# Average width of a character, as a fraction of the font size (for
# wrapping and legend layout; the text itself is placed by its anchor).
CHAR = 0.6


# Series: colour, marker, line dash and bar fill. The lightness of the
# colours differs (CIE L* 18 to 71), markers and fills differ too, so that a
# grey print still tells them apart.
BLUE, ORANGE, GREEN, PURPLE, LILAC = "#1f4e96", "#e69f00", "#009e73", "#3f007d", "#807dba"
STYLES = {
    "ours": (BLUE, "circle", None, BLUE),
    "raw": (ORANGE, "square", "7 3", ORANGE),
    "rmcp": (ORANGE, "square", "7 3", ORANGE),
    "raw-again": ("#737373", "square-open", "2 2", "#cccccc"),
    "rmcp-again": ("#737373", "square-open", "2 2", "#cccccc"),
    "java": (GREEN, "triangle", "4 2 1 2", "url(#hatch-java)"),
    "before": (BLUE, "diamond-open", "1 3", "url(#hatch-before)"),
    "ours-before": (BLUE, "diamond-open", "1 3", "url(#hatch-before)"),
    "unbatched": ("#6baed6", "diamond", "5 2", "#6baed6"),
    "python": (PURPLE, "triangle-down", "3 3", PURPLE),
    "python-c1": (PURPLE, "triangle-down", "3 3", PURPLE),
}
PATTERNS = (
    '<pattern id="hatch-java" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(-45)">'
    f'<rect width="6" height="6" fill="{GREEN}"/><line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/>'
    '</pattern>',
    '<pattern id="hatch-before" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">'
    f'<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="{BLUE}" stroke-width="3"/>'
    '</pattern>',
)


def style(name):
    if name in STYLES:
        return STYLES[name]
    if name.startswith("python"):
        return (LILAC, "diamond", "8 3 2 3", LILAC)
    return ("#000000", "circle", None, "#000000")


# --- numbers -----------------------------------------------------------------

def num(value):
    """A coordinate: one decimal at most, the same text on every machine."""
    text = f"{value:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def tick_text(value):
    if value >= 1000:
        return f"{value:,.0f}"
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def value_text(value, digits=None):
    if digits is not None:
        return f"{value:,.{digits}f}"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


class Linear:
    """From zero to a round number above `top`, onto pixels `low`..`high`."""

    def __init__(self, top, low, high):
        top = top if top > 0 else 1
        raw = top / 5
        magnitude = 10 ** math.floor(math.log10(raw))
        for step in (1, 2, 2.5, 5, 10):
            step *= magnitude
            if top / step <= 5.5:
                break
        self.step = step
        count = math.ceil(top / step - 1e-9)
        self.top = count * step
        self.ticks = [round(n * step, 10) for n in range(count + 1)]
        self.low, self.high = low, high

    def __call__(self, value):
        return self.low + (self.high - self.low) * value / self.top


class Log:
    """Whole decades around `values`, onto pixels `low`..`high`."""

    def __init__(self, values, low, high):
        values = [v for v in values if v > 0]
        first = math.floor(math.log10(min(values)) + 1e-9)
        last = math.ceil(math.log10(max(values)) - 1e-9)
        if last <= first:
            last = first + 1
        self.first, self.last = first, last
        self.low, self.high = low, high
        self.ticks = [10.0 ** e for e in range(first, last + 1)]
        if last - first <= 2:
            self.ticks = sorted(self.ticks + [m * 10.0 ** e for e in range(first, last) for m in (2, 5)])
        self.ticks = [round(t, 10) for t in self.ticks]

    def __call__(self, value):
        position = (math.log10(value) - self.first) / (self.last - self.first)
        return self.low + (self.high - self.low) * position


# --- drawing -----------------------------------------------------------------

def text_width(text, size):
    return len(text) * size * CHAR


def wrap(text, width, size):
    lines, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if line and text_width(candidate, size) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    return lines + ([line] if line else [])


class Figure:
    """A title, a legend, a grid of panels and a caption, top to bottom."""

    def __init__(self, title, subtitle, width=WIDTH):
        self.width = width
        self.title = title
        self.parts = []
        self.y = 12
        for line in wrap(title, width - 40, 17 * 1.1):
            self.y += 22
            self.text(20, self.y, line, size=17, weight="bold")
        self.y += 4
        for line in wrap(subtitle, width - 40, 12):
            self.y += 17
            self.text(20, self.y, line, size=12, fill=MUTED)
        self.y += 14

    # primitives

    def add(self, element):
        self.parts.append(element)

    def text(self, x, y, content, size=12, anchor="start", weight=None, fill=INK, rotate=False):
        attributes = f'x="{num(x)}" y="{num(y)}" font-size="{size}" fill="{fill}"'
        if anchor != "start":
            attributes += f' text-anchor="{anchor}"'
        if weight:
            attributes += f' font-weight="{weight}"'
        if rotate:
            attributes += f' transform="rotate(-90 {num(x)} {num(y)})"'
        self.add(f"<text {attributes}>{escape(content)}</text>")

    def line(self, x1, y1, x2, y2, stroke=INK, width=1, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}" '
                 f'stroke-width="{num(width)}"{extra}/>')

    def rect(self, x, y, w, h, fill, stroke=None, width=1):
        extra = f' stroke="{stroke}" stroke-width="{num(width)}"' if stroke else ""
        self.add(f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" fill="{fill}"{extra}/>')

    def polyline(self, points, stroke, width=2, dash=None):
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        coordinates = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.add(f'<polyline points="{coordinates}" fill="none" stroke="{stroke}" stroke-width="{num(width)}"'
                 f' stroke-linejoin="round"{extra}/>')

    def marker(self, shape, x, y, colour, r=4.5):
        hollow = shape.endswith("-open")
        shape = shape.removesuffix("-open")
        fill = "#ffffff" if hollow else colour
        common = f'fill="{fill}" stroke="{colour if hollow else "#ffffff"}" stroke-width="{1.6 if hollow else 0.8}"'
        if shape == "circle":
            self.add(f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" {common}/>')
            return
        if shape == "square":
            s = r * 0.9
            points = [(x - s, y - s), (x + s, y - s), (x + s, y + s), (x - s, y + s)]
        elif shape == "triangle":
            points = [(x, y - r * 1.2), (x + r * 1.1, y + r * 0.8), (x - r * 1.1, y + r * 0.8)]
        elif shape == "triangle-down":
            points = [(x, y + r * 1.2), (x + r * 1.1, y - r * 0.8), (x - r * 1.1, y - r * 0.8)]
        else:  # diamond
            points = [(x, y - r * 1.25), (x + r * 1.05, y), (x, y + r * 1.25), (x - r * 1.05, y)]
        coordinates = " ".join(f"{num(px)},{num(py)}" for px, py in points)
        self.add(f'<polygon points="{coordinates}" {common}/>')

    # layout

    def legend(self, items):
        """items: (kind, series or None, label); kind is bar, line, dot,
        marker, band, reference or range."""
        x, size = 20, 12
        self.y += 4
        for kind, series, label in items:
            span = 26 + text_width(label, size) + 18
            if x + span > self.width - 20 and x > 20:
                x = 20
                self.y += 20
            middle = self.y
            colour, shape, dash, fill = style(series) if series else (INK, "circle", None, INK)
            if kind == "bar":
                self.rect(x, middle - 6, 18, 12, fill, stroke=colour if fill.startswith("url") or series and
                          series.endswith("again") else None)
            elif kind == "band":
                self.rect(x, middle - 6, 18, 12, BAND)
            elif kind == "reference":
                self.line(x, middle, x + 18, middle, stroke=INK, width=1.2, dash="5 3")
            elif kind == "line":
                self.line(x - 2, middle, x + 20, middle, stroke=colour, width=2, dash=dash)
                self.marker(shape, x + 9, middle, colour)
            elif kind == "marker":
                self.marker(shape, x + 9, middle, colour)
            elif kind == "range":
                self.line(x + 9, middle - 7, x + 9, middle + 7, stroke=INK, width=2)
                self.marker("circle", x + 9, middle + 7, INK, r=3)
                self.marker("circle", x + 9, middle - 7, INK, r=3)
            else:  # dot
                self.line(x + 9, middle - 7, x + 9, middle + 7, stroke=colour, width=1.2)
                self.marker(shape, x + 9, middle, colour)
            self.text(x + 26, middle + 4, label, size=size)
            x += span
        self.y += 16

    def grid(self, columns, rows, height, gap=16):
        """Boxes (x, y, w, h) of a grid of panels, row by row."""
        width = (self.width - 20 - gap * (columns - 1)) / columns
        boxes = []
        for row in range(rows):
            for column in range(columns):
                boxes.append((10 + column * (width + gap), self.y + row * (height + gap), width, height))
        self.y += rows * height + (rows - 1) * gap
        return boxes

    def caption(self, parts):
        """Lines of parts joined by " · ", broken between parts where one fits."""
        self.y += 8
        lines, line = [], ""
        for part in parts:
            candidate = f"{line} · {part}" if line else part
            if line and text_width(candidate, 11) > self.width - 40:
                lines.append(line)
                line = part
            else:
                line = candidate
        for line in [piece for whole in lines + [line] for piece in wrap(whole, self.width - 40, 11)]:
            self.y += 15
            self.text(20, self.y, line, size=11, fill=MUTED)

    def svg(self):
        height = math.ceil(self.y + 14)
        return "\n".join([
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{height}" '
            f'viewBox="0 0 {self.width} {height}" font-family={quoteattr(FONT)}>',
            f"<title>{escape(self.title)}</title>",
            "<defs>", *PATTERNS, "</defs>",
            f'<rect width="{self.width}" height="{height}" fill="#ffffff"/>',
            *self.parts,
            "</svg>",
            "",
        ])


# --- panels ------------------------------------------------------------------

def plot_area(box, xlabel=False):
    x, y, w, h = box
    return x + 66, y + 26, x + w - 8, y + h - (42 if xlabel else 26)


def axes(fig, box, title, scale, ylabel, xlabel=None):
    left, top, right, bottom = plot_area(box, xlabel)
    x, y, w, h = box
    fig.text(left, y + 14, title, size=13, weight="bold")
    for tick in scale.ticks:
        py = scale(tick)
        fig.line(left, py, right, py, stroke=GRID)
        fig.line(left - 4, py, left, py, stroke=INK)
        fig.text(left - 7, py + 4, tick_text(tick), size=11, anchor="end")
    fig.line(left, top, left, bottom, stroke=INK)
    fig.line(left, bottom, right, bottom, stroke=INK)
    fig.text(x + 13, (top + bottom) / 2, ylabel, size=11, anchor="middle", fill=MUTED, rotate=True)
    if xlabel:
        fig.text((left + right) / 2, y + h - 6, xlabel, size=11, anchor="middle", fill=MUTED)


def scale_for(box, values, log=False, xlabel=False):
    left, top, right, bottom = plot_area(box, xlabel)
    values = [v for v in values if v is not None]
    if log:
        return Log(values, bottom, top)
    # Room above the highest whisker for its value.
    return Linear(max(values) * 1.12, bottom, top)


def grouped(fig, box, title, ylabel, groups, series, get, mode="bar", log=False, band=None, reference=None,
            labels=True, xlabel=None, digits=None, empty="not measured"):
    """Series side by side in each group. get(group, series) gives
    (median, low, high) for bars and dots, (p50, p99) for ranges, or None.
    band(group) gives (low, high) or None, drawn behind the group."""
    values = []
    for group in groups:
        for name in series:
            found = get(group, name)
            if found:
                values += list(found)
        if band and band(group):
            values += list(band(group))
    if reference is not None:
        values.append(reference)
    if not values:
        return
    scale = scale_for(box, values, log, xlabel)
    axes(fig, box, title, scale, ylabel, xlabel)
    left, top, right, bottom = plot_area(box, xlabel)
    width = (right - left) / len(groups)
    for index, group in enumerate(groups):
        centre = left + width * (index + 0.5)
        if band and band(group):
            low, high = band(group)
            fig.rect(centre - width * 0.46, scale(high), width * 0.92, max(scale(low) - scale(high), 1), BAND)
        present = [name for name in series if get(group, name)]
        if group:
            fig.text(centre, bottom + 16, group, size=12, anchor="middle")
        if not present:
            fig.text(centre, (top + bottom) / 2, empty, size=11, anchor="middle", fill=MUTED)
            continue
        slot = min(44 if mode == "bar" else 22, width * 0.84 / len(present))
        start = centre - slot * len(present) / 2
        for n, name in enumerate(present):
            colour, shape, dash, fill = style(name)
            middle = start + slot * (n + 0.5)
            found = get(group, name)
            if mode == "range":
                p50, p99 = found
                fig.line(middle, scale(p50), middle, scale(p99), stroke=colour, width=2.2)
                fig.marker(shape, middle, scale(p50), colour)
                fig.marker(shape, middle, scale(p99), colour)
                continue
            median, low, high = found
            if mode == "bar":
                bar = slot - 4
                fig.rect(middle - bar / 2, scale(median), bar, bottom - scale(median), fill,
                         stroke=colour if fill.startswith("url") or name.endswith("again") else None)
            cap = min(5, slot / 4)
            fig.line(middle, scale(low), middle, scale(high), stroke=INK if mode == "bar" else colour, width=1.2)
            fig.line(middle - cap, scale(low), middle + cap, scale(low), stroke=INK if mode == "bar" else colour)
            fig.line(middle - cap, scale(high), middle + cap, scale(high), stroke=INK if mode == "bar" else colour)
            if mode == "dot":
                fig.marker(shape, middle, scale(median), colour)
            if labels:
                fig.text(middle, scale(high) - 5, value_text(median, digits), size=10, anchor="middle")
    if reference is not None:
        fig.line(left, scale(reference), right, scale(reference), stroke=INK, width=1.2, dash="5 3")


def lines(fig, box, title, ylabel, xs, series, get, xlabel):
    """One line per series across the loads xs (log x), whiskers low–high.
    get(series, x) gives (median, low, high) or None."""
    values = [v for name in series for x in xs if get(name, x) for v in get(name, x)]
    scale = scale_for(box, values, log=True, xlabel=True)
    axes(fig, box, title, scale, ylabel, xlabel)
    left, top, right, bottom = plot_area(box, True)
    inner_left, inner_right = left + 34, right - 34
    if len(xs) > 1:
        first, last = math.log10(xs[0]), math.log10(xs[-1])
        place = {x: inner_left + (inner_right - inner_left) * (math.log10(x) - first) / (last - first) for x in xs}
    else:
        place = {xs[0]: (left + right) / 2}
    for x in xs:
        fig.line(place[x], bottom, place[x], bottom + 4, stroke=INK)
        fig.text(place[x], bottom + 16, tick_text(x), size=11, anchor="middle")
    for n, name in enumerate(series):
        colour, shape, dash, _ = style(name)
        shift = (n - (len(series) - 1) / 2) * 5
        points = [(place[x] + shift, get(name, x)) for x in xs if get(name, x)]
        fig.polyline([(px, scale(v[0])) for px, v in points], colour, width=2, dash=dash)
        for px, (median, low, high) in points:
            fig.line(px, scale(low), px, scale(high), stroke=colour, width=1.2)
            fig.line(px - 3, scale(low), px + 3, scale(low), stroke=colour)
            fig.line(px - 3, scale(high), px + 3, scale(high), stroke=colour)
            fig.marker(shape, px, scale(median), colour)


# --- captions ----------------------------------------------------------------

def caption(data, source, what, show=("pulsar broker",)):
    """Where the figures come from: the file, the run and the machine, and
    the versions of `show` beside rustc's."""
    parts = [f"Data: {source}", what]
    if data.get("quick"):
        parts.append("BENCH_QUICK smoke run")
    if data.get("date") or data.get("commit"):
        parts.append(f"run {str(data.get('date') or '?')[:10]} at commit {data.get('commit') or '?'}")
    else:
        parts.append("run date and commit not recorded in this file")
    v = data.get("versions") or {}
    if v:
        parts.append(f"{v.get('cpu', '?')}, {v.get('cores', '?')} cores, {v.get('memory', '?')}, "
                     f"kernel {v.get('kernel', '?')}")
        names = {"pulsar broker": "Pulsar broker", "python": "Python", "trustgraph-base": "trustgraph-base"}
        versions = [str(v.get("rustc", "rustc ?")).split(" (")[0]]
        versions += [f"{names.get(key, key)} {v[key]}" for key in show if v.get(key)]
        parts.append(", ".join(versions))
    return parts


def before_label(data):
    label = data.get("before_label")
    return f"ours before: {label}" if label else "ours before (another build)"


def spread(values):
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else None


# --- the plots ---------------------------------------------------------------

def python_concurrency(label):
    return int(label.split("-c", 1)[1]) if label.startswith("python-c") and label[8:].isdigit() else 0


def results_series(services):
    kinds, loads, variants = [], [], []
    for key in services:
        kind, load, label = key.split("/", 2)
        for found, value in ((kinds, kind), (loads, int(load)), (variants, label)):
            if value not in found:
                found.append(value)
    order = {"ours": 0, "raw": 1}
    variants.sort(key=lambda v: (order.get(v, 2), python_concurrency(v), v))
    return kinds, sorted(loads), variants


def results_label(variant):
    if variant == "ours":
        return "ours (serve)"
    if variant == "raw":
        return "hand-written pulsar loop"
    if variant.startswith("python-c"):
        return f"TrustGraph Python, --concurrency {python_concurrency(variant)}"
    return variant


def pulsar_load(r):
    s = r["services"]
    kinds, loads, variants = results_series(s)
    fig = Figure("Over Pulsar: throughput and CPU per request against requests in flight",
                 f"Median of {r['repeats']} runs per point, whiskers min–max; logarithmic axes. CPU per request is "
                 "the service's (user + system), the table's seconds per 10k requests × 100.")
    fig.legend([("line", v, results_label(v)) for v in variants])
    boxes = fig.grid(len(kinds), 2, 250)

    def metric(kind, key, factor):
        def get(variant, load):
            m = s.get(f"{kind}/{load}/{variant}")
            if not m:
                return None
            stat = m[key]
            return stat["median"] * factor, stat["min"] * factor, stat["max"] * factor
        return get

    for column, kind in enumerate(kinds):
        lines(fig, boxes[column], f"{kind}: throughput", "requests/s", loads, variants,
              metric(kind, "throughput", 1), "requests in flight")
        lines(fig, boxes[len(kinds) + column], f"{kind}: CPU per request", "CPU µs / request", loads, variants,
              metric(kind, "cpu_s_per_10k", 100), "requests in flight")
    fig.caption(caption(r, "bench/results.json", "each variant alone on one local broker, one Rust load generator",
                        ("pulsar broker", "python", "trustgraph-base")))
    return fig.svg()


def pulsar_latency(r):
    s = r["services"]
    kinds, loads, variants = results_series(s)
    at = ", ".join(str(n) for n in loads[:-1]) + (" and " if len(loads) > 1 else "") + str(loads[-1])
    fig = Figure(f"Over Pulsar: latency at {at} requests in flight, p50 and p99 (ms)",
                 f"Each bar runs from p50 (lower marker) to p99 (upper marker), medians of {r['repeats']} runs; "
                 "logarithmic axis. The load generator records these two percentiles.")
    fig.legend([("marker", v, results_label(v)) for v in variants] + [("range", None, "p50 – p99")])
    boxes = fig.grid(len(kinds), 1, 330)
    for column, kind in enumerate(kinds):
        def get(load, variant, kind=kind):
            m = s.get(f"{kind}/{load}/{variant}")
            return (m["p50_us"]["median"] / 1000, m["p99_us"]["median"] / 1000) if m else None
        grouped(fig, boxes[column], f"{kind}: latency", "ms (log scale)", [str(n) for n in loads], variants,
                lambda group, variant, get=get: get(int(group), variant), mode="range", log=True,
                xlabel="requests in flight")
    fig.caption(caption(r, "bench/results.json", "each variant alone on one local broker, one Rust load generator",
                        ("pulsar broker", "python", "trustgraph-base")))
    return fig.svg()


def paired_variants(p):
    """Variants of the ratio table, in its order, over every workload."""
    found = []
    for by_variant in p["summary"].values():
        for variant in by_variant:
            if variant in ("raw-again", "absolute", "errors") or variant.startswith("ours_vs") or variant in found:
                continue
            found.append(variant)
    return found


def paired_label(p, variant):
    return {"ours": "ours (serve)", "raw": "hand-written pulsar loop",
            "raw-again": "the loop, second run (noise floor)", "java": "the loop over Pulsar's Java client",
            "unbatched": "ours, --response-batching off",
            "before": before_label(p)}.get(variant, variant)


def paired_in_flight(p):
    """How many requests were in flight, as a title says it."""
    loads = sorted({w.get("in_flight", p["in_flight"]) for w in p["workloads"].values()}, reverse=True)
    if len(loads) == 1:
        return f"{loads[0]} in flight"
    return f"{p['in_flight']} in flight (" + ", ".join(
        f"{name}: {w['in_flight']}" for name, w in p["workloads"].items() if w.get("in_flight", p["in_flight"]) != p["in_flight"]) + ")"


def paired_what(p):
    return f"{p['rounds']} rounds at {paired_in_flight(p)}, the variants back to back in alternating order"


def paired_ratios(p):
    summary = p["summary"]
    kinds = list(summary)
    variants = paired_variants(p)
    fig = Figure("Over Pulsar, paired: each variant ÷ the hand-written loop of its round",
                 f"{paired_in_flight(p)}. Bar: median of {p['rounds']} per-round ratios, whisker: min–max; grey band: the loop's second "
                 "run ÷ its first, min–max, what two runs of one program differ by. Throughput: higher is better; "
                 "CPU per request and p99: lower is better.")
    fig.legend([("bar", v, paired_label(p, v)) for v in variants]
               + [("band", None, "noise floor (loop ÷ loop)"), ("reference", None, "1 = the loop")])
    boxes = fig.grid(3, 1, 330)
    for box, (key, title) in zip(boxes, (("throughput", "Throughput ÷ loop"),
                                         ("cpu_per_request", "CPU per request ÷ loop"), ("p99", "p99 ÷ loop"))):
        def get(kind, variant, key=key):
            stat = summary[kind].get(variant, {}).get(key)
            return (stat["median"], stat["min"], stat["max"]) if stat else None

        def band(kind, key=key):
            stat = summary[kind].get("raw-again", {}).get(key)
            return (stat["min"], stat["max"]) if stat else None

        grouped(fig, box, title, "ratio", kinds, variants, get, band=band, reference=1.0, digits=2)
    fig.caption(caption(p, "bench/paired.json", paired_what(p)))
    return fig.svg()


def absolute_variants(summary):
    """The variants a paired run has figures of, in the order they first
    appear."""
    variants = []
    for by_variant in summary.values():
        variants += [v for v in by_variant["absolute"] if v not in variants]
    return variants


def paired_absolute(p):
    summary = p["summary"]
    kinds = list(summary)
    variants = absolute_variants(summary)
    fig = Figure(f"Over Pulsar, paired: throughput and CPU per request at {paired_in_flight(p)}",
                 f"Bar: median of {p['rounds']} rounds, whisker: min–max over the rounds. CPU per request is the "
                 "service process's (user + system).")
    fig.legend([("bar", v, paired_label(p, v)) for v in variants])
    boxes = fig.grid(len(kinds), 2, 250)
    for row, (key, title, unit) in enumerate((("throughput", "throughput", "requests/s"),
                                              ("cpu_us_per_request", "CPU per request", "CPU µs / request"))):
        for column, kind in enumerate(kinds):
            def get(group, variant, kind=kind, key=key):
                median = summary[kind]["absolute"].get(variant, {}).get(key)
                if median is None:
                    return None
                low, high = spread([run[variant][key] for run in p["runs"][kind] if variant in run])
                return median, low, high
            grouped(fig, boxes[row * len(kinds) + column], f"{kind}: {title}", unit, [""], variants, get,
                    digits=0 if key == "throughput" else 1)
    fig.caption(caption(p, "bench/paired.json", paired_what(p)))
    return fig.svg()


def paired_latency(p):
    summary = p["summary"]
    kinds = list(summary)
    variants = absolute_variants(summary)
    fig = Figure(f"Over Pulsar, paired: latency at {paired_in_flight(p)}, p50 and p99 (ms)",
                 f"Each bar runs from p50 (lower marker) to p99 (upper marker), medians of {p['rounds']} rounds. "
                 "The load generator records these two percentiles.")
    fig.legend([("marker", v, paired_label(p, v)) for v in variants] + [("range", None, "p50 – p99")])
    boxes = fig.grid(len(kinds), 1, 300)
    for box, kind in zip(boxes, kinds):
        def get(group, variant, kind=kind):
            a = summary[kind]["absolute"].get(variant)
            return (a["p50_us"] / 1000, a["p99_us"] / 1000) if a else None
        grouped(fig, box, f"{kind}: latency", "ms", [""], variants, get, mode="range")
    fig.caption(caption(p, "bench/paired.json", paired_what(p)))
    return fig.svg()


def mcp_servers(m):
    found = []
    for s in m["summary"].values():
        found += [server for server in s["absolute"] if server not in found]
    return found


def mcp_label(m, server):
    return {"ours": "ours (mcp)", "rmcp": "rmcp, #[tool] macros", "rmcp-again": "rmcp, second run (noise floor)",
            "python": "Python MCP SDK", "ours-before": before_label(m), "mcp-go": "mark3labs/mcp-go v1.2.1",
            "go-sdk": "official Go SDK v1.8.0", "floor": "floor: Go net/http + JSON, no MCP"}.get(server, server)


def mcp_what(m):
    return f"{m['rounds']} rounds, the servers back to back in alternating order, one Rust load generator"


def mcp_ratios(m):
    summary = m["summary"]
    keys = list(summary)
    servers = [server for server in mcp_servers(m) if server not in ("rmcp", "rmcp-again", "python")]
    python = [s["ours_vs_python"]["median"] for s in summary.values() if "ours_vs_python" in s]
    fig = Figure("MCP tools/call, paired: ours ÷ rmcp of the same round",
                 f"Bar: median of {m['rounds']} per-round ratios, whisker: min–max; grey band: rmcp's second run ÷ "
                 "its first, min–max (the noise floor)."
                 + (f" The Python SDK, far below (ours is {min(python):.1f}× to {max(python):.1f}× its throughput), "
                    "is in the absolute figures." if python else ""))
    fig.legend([("bar", server, mcp_label(m, server)) for server in servers]
               + [("band", None, "noise floor (rmcp ÷ rmcp)"), ("reference", None, "1 = rmcp")])
    boxes = fig.grid(2, 1, 330)
    for box, (key, title) in zip(boxes, (("throughput", "Throughput ÷ rmcp (higher is better)"),
                                         ("p99", "p99 ÷ rmcp (lower is better)"))):
        def get(transport, server, key=key):
            stat = summary[transport]["ratios"].get(server, {}).get(key)
            return (stat["median"], stat["min"], stat["max"]) if stat else None

        def band(transport, key=key):
            stat = summary[transport]["ratios"].get("rmcp-again", {}).get(key)
            return (stat["min"], stat["max"]) if stat else None

        grouped(fig, box, title, "ratio", keys, servers, get, band=band, reference=1.0, digits=2,
                xlabel="transport / calls in flight")
    fig.caption(caption(m, "bench/mcp.json", mcp_what(m), ("python",)))
    return fig.svg()


def mcp_absolute(m):
    summary = m["summary"]
    keys = list(summary)
    servers = mcp_servers(m)
    fig = Figure("MCP tools/call: calls/s and server CPU per call",
                 f"Marker: median of {m['rounds']} rounds, whisker: min–max over the rounds; logarithmic axes. "
                 "Server CPU is not measured over stdio (the load generator runs the server).")
    fig.legend([("dot", server, mcp_label(m, server)) for server in servers])
    boxes = fig.grid(1, 2, 280)
    for box, (key, run_key, title, unit) in zip(boxes, (
            ("throughput", "throughput", "Throughput", "calls/s (log scale)"),
            ("cpu_us_per_call", "cpu_us_per_call", "Server CPU per call", "CPU µs / call (log scale)"))):
        def get(transport, server, key=key, run_key=run_key):
            median = summary[transport]["absolute"].get(server, {}).get(key)
            if median is None:
                return None
            low, high = spread([run[server].get(run_key) for run in m["runs"][transport] if server in run])
            return median, low, high
        grouped(fig, box, title, unit, keys, servers, get, mode="dot", log=True, labels=False,
                xlabel="transport / calls in flight")
    fig.caption(caption(m, "bench/mcp.json", mcp_what(m), ("python",)))
    return fig.svg()


def mcp_latency(m):
    summary = m["summary"]
    keys = list(summary)
    servers = mcp_servers(m)
    fig = Figure("MCP tools/call: latency, p50 and p99 (ms)",
                 f"Each bar runs from p50 (lower marker) to p99 (upper marker), medians of {m['rounds']} rounds; "
                 "logarithmic axis. The load generator records these two percentiles.")
    fig.legend([("marker", server, mcp_label(m, server)) for server in servers] + [("range", None, "p50 – p99")])
    boxes = fig.grid(1, 1, 340)

    def get(transport, server):
        a = summary[transport]["absolute"].get(server)
        return (a["p50_us"] / 1000, a["p99_us"] / 1000) if a else None

    grouped(fig, boxes[0], "Latency of a call", "ms (log scale)", keys, servers, get, mode="range", log=True,
            xlabel="transport / calls in flight")
    fig.caption(caption(m, "bench/mcp.json", mcp_what(m), ("python",)))
    return fig.svg()


# name: (JSON file, drawing, what the image shows, for its alt text)
PLOTS = {
    "pulsar-load.svg": ("results.json", pulsar_load,
                        "Throughput and CPU per request against requests in flight over Pulsar"),
    "pulsar-latency.svg": ("results.json", pulsar_latency, "p50 and p99 latency over Pulsar at each load"),
    "paired-ratios.svg": ("paired.json", paired_ratios,
                          "Paired rounds: throughput, CPU per request and p99, each ÷ the hand-written loop"),
    "paired-absolute.svg": ("paired.json", paired_absolute, "Paired rounds: throughput and CPU per request"),
    "paired-latency.svg": ("paired.json", paired_latency, "Paired rounds: p50 and p99 latency"),
    "mcp-ratios.svg": ("mcp.json", mcp_ratios, "tools/call over MCP: throughput and p99, ours ÷ rmcp"),
    "mcp-absolute.svg": ("mcp.json", mcp_absolute, "tools/call over MCP: calls/s and server CPU per call"),
    "mcp-latency.svg": ("mcp.json", mcp_latency, "tools/call over MCP: p50 and p99 latency"),
}


def image(name):
    """The Markdown image line of a plot, relative to BENCHMARKS.md."""
    return f"![{PLOTS[name][2]}]({LINK_DIR}/{name})"


def drawn(bench=BENCH):
    """Every plot whose JSON is there: {name: SVG text}."""
    cache, out = {}, {}
    for name, (source, draw, _) in PLOTS.items():
        path = bench / source
        if not path.exists():
            continue
        if source not in cache:
            cache[source] = json.loads(path.read_text())
        out[name] = draw(cache[source])
    return out


def write(out=OUT, quiet=False):
    """Draws every plot into `out`, rewriting only the files that change."""
    out.mkdir(parents=True, exist_ok=True)
    for name, text in drawn().items():
        path = out / name
        data = text.encode()
        if path.exists() and path.read_bytes() == data:
            continue
        path.write_bytes(data)
        if not quiet:
            print(f"plots: wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)


def check():
    """0 when bench/plots/ holds exactly what the JSON gives, else 1."""
    with tempfile.TemporaryDirectory() as scratch:
        fresh = pathlib.Path(scratch)
        write(fresh, quiet=True)
        expected = {path.name: path.read_bytes() for path in fresh.glob("*.svg")}
    committed = {path.name: path.read_bytes() for path in OUT.glob("*.svg")} if OUT.exists() else {}
    problems = [f"{name}: differs from what the JSON gives" for name in sorted(expected)
                if name in committed and committed[name] != expected[name]]
    problems += [f"{name}: missing" for name in sorted(expected) if name not in committed]
    problems += [f"{name}: no JSON draws it" for name in sorted(committed) if name not in expected]
    for problem in problems:
        print(f"bench/plots/{problem}", file=sys.stderr)
    if problems:
        print("redraw with: python3 bench/plots.py", file=sys.stderr)
        return 1
    print(f"bench/plots: {len(expected)} plots match the JSON", file=sys.stderr)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if bench/plots/ differs from what the JSON gives")
    parser.add_argument("--out", type=pathlib.Path, help="draw into this directory instead of bench/plots/")
    args = parser.parse_args()
    if args.check:
        sys.exit(check())
    write(args.out.resolve() if args.out else OUT)


if __name__ == "__main__":
    main()
