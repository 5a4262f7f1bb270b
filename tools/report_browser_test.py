#!/usr/bin/env python3
"""Opens `spmdsim report` pages in headless Chromium and uses them as a reader would.

  report_browser_test.py CHROMIUM SPMDSIM TESTDATA [--artifacts DIR] [--screenshot-out PNG]

Chromium (--headless, a 1400x1000 viewport) is driven through the DevTools protocol on a pipe
(tools/cdp_pipe.py): real mouse moves, clicks, wheel turns and typed text, every wait bounded.
The page is held to docs/REPORT_PAGE.md. In the reports of three dumps (CPU dp8, GPU seed, TPU
lm1b) it checks, in the section of the train step:
  - process view: `section.process tr.selected` is the after-optimizations module with the
    largest peak of `spmdsim analyze --format json`, and its section.module is shown; clicking
    another row selects that one and shows its section;
  - memory view: at load the panel lists the peak; hovering the canvas at 20 % and 80 % of its
    width and over the peak lists the position under the pointer; at each, span.memview-total's
    data-bytes, table.memview-live's data-count and its rows (data-bytes, -instruction, -index,
    -category, in order) and span.memview-instruction are those of
    `spmdsim analyze --at POSITION`'s memory.live_at; a click pins the position (moving on keeps
    it; a second click unpins); the wheel and a drag narrow [data-first, data-last],
    button.memview-reset restores 0..data-positions-1, button.memview-peak selects the peak;
  - tables: a click on a header of each table.sortable (its size column, else its first
    data-sort column) orders the rows by data-sort and sets aria-sort, a second click reverses
    it; typing into each input.table-filter (in the other case) leaves exactly the rows that hold
    the text, data-shown counts them, clearing shows all (the RNG groups' table is left out of
    both: a group keeps its members and is kept for them);
  - findings: clicking each details.finding's summary opens it and shows a source location
    (file.ext:line); clicking an a.show-position selects its data-position and scrolls the
    memory view into sight;
  - RNG groups: no tr.rng-member shows until a tr.rng-group is clicked; then data-sites of them;
  - the page logs nothing (console API calls, uncaught exceptions and dialogs, collected through
    the protocol; a probe page first shows they are seen) and loads nothing but itself.
Elements inside a closed <details> are reached as a reader does: its summary is clicked first.
The dp8 page must also hold analyze's peak bytes and the collective count of `spmdsim collectives`.
A copy of dp8's after-optimizations module whose op_names hold HTML/JS payloads must show them
as text: no <img> in the source or the DOM (after load and after hovering, as the panel is drawn
by script), the DOM's script elements those of the source (one of ours, the rest
`application/json` blocks that parse), the payloads in the page's text and the panel's rows.
A line per page says what was exercised. Each page's viewport is saved as a PNG after the hover
into --artifacts (default ./report_browser_artifacts, under ctest the build tree);
--screenshot-out copies the dp8 one there (docs/report_screenshot.png).
Standard library only; run by ctest (label "browser") when Chromium is found.
"""
import argparse
import gzip
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp_pipe  # noqa: E402  (lives beside this file)

SCRIPT_PAYLOAD = "<script>alert(1)</script>"
IMG_PAYLOAD = '"><img src=x onerror=alert(1)>'

# (label, dump folder under testdata/dumps); dp8 also gets the figure and payload checks.
DUMPS = [("cpu", "dp8_partitionable_remat"),
         ("gpu", "jax012_gpu8_seed_flax_dp_partitionable_kernel_remat"),
         ("tpu", "jax012_tpu4_flax_lm1b_replicated")]
# Where over the canvas the pointer goes first (fractions of its width); then over the peak.
HOVER_POINTS = [0.2, 0.8]
# Rows table.memview-live shows at most.
LIVE_ROWS_SHOWN = 200

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)
    return condition


def as_int(text):
    """An integer attribute or text (thousands separators allowed), or None."""
    if text is None:
        return None
    text = str(text).strip().replace(",", "").replace("\u2009", "")
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def js_call(function, *args):
    """A JavaScript expression applying function (source text) to JSON arguments."""
    return f"({function})({', '.join(json.dumps(a) for a in args)})"


# --- what spmdsim says ---

def run_json(spmdsim, *args):
    out = subprocess.run([spmdsim, *args, "--format", "json"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return json.loads(out)


def train_step(analysis):
    """(1-based index, module) of the after-optimizations module with the largest peak."""
    candidates = [(m["memory"]["peak_bytes"], i + 1, m) for i, m in enumerate(analysis["modules"])
                  if m["stage"] == "after_optimizations"]
    _, index, module = max(candidates, key=lambda c: c[0])
    return index, module


def live_at(spmdsim, dump, name, position):
    """`analyze --at POSITION`'s memory.live_at of the after-optimizations module `name`."""
    modules = run_json(spmdsim, "analyze", dump, "--module", name, "--stage", "after",
                       "--at", str(position))["modules"]
    matches = [m for m in modules if m["name"] == name and m["stage"] == "after_optimizations"]
    assert len(matches) == 1, f"{len(matches)} after-optimizations modules named {name}"
    return matches[0]["memory"]["live_at"]


# --- the page's HTML, parsed here ---

class Elements(html.parser.HTMLParser):
    """Collects the start tags (with attributes) and the text outside scripts of a document."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.text = []
        self.in_raw = False  # inside <script> or <style>, whose content is not text

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.in_raw = tag in ("script", "style")

    def handle_endtag(self, tag):
        self.in_raw = False

    def handle_data(self, data):
        if not self.in_raw:
            self.text.append(data)


def parse(dom):
    """(tag names, {tag: [attribute dicts]}, text outside scripts and styles) of a document."""
    parser = Elements()
    parser.feed(dom)
    by_tag = {}
    for tag, attrs in parser.tags:
        by_tag.setdefault(tag, []).append(attrs)
    return [t for t, _ in parser.tags], by_tag, "".join(parser.text)


# --- page state, read through the protocol ---

READ_MEMVIEW = """section => {
    const scope = document.querySelector(section);
    const view = scope && scope.querySelector('div.memview');
    if (!view) return null;
    const text = s => { const e = scope.querySelector(s); return e ? e.textContent.trim() : null; };
    const total = scope.querySelector('span.memview-total');
    const table = scope.querySelector('table.memview-live');
    return {
        positions: view.dataset.positions, first: view.dataset.first, last: view.dataset.last,
        peak: view.dataset.peakPosition, selected: view.dataset.selected,
        position: text('span.memview-position'), instruction: text('span.memview-instruction'),
        total: total ? total.dataset.bytes : null, count: table ? table.dataset.count : null,
        rows: table ? [...table.querySelectorAll('tbody tr')].map(r =>
            [r.dataset.bytes, r.dataset.instruction, r.dataset.index, r.dataset.category]) : null,
    };
}"""


class MemView:
    """The memory view of one module section: its state, and the pointer over its canvas."""

    def __init__(self, page, section):
        self.page, self.section = page, section
        self.canvas = f"document.querySelector({json.dumps(section + ' canvas.memview-curve')})"

    def state(self):
        state = self.page.evaluate(js_call(READ_MEMVIEW, self.section))
        if state:
            for key in ("positions", "first", "last", "peak", "selected", "position", "total",
                        "count"):
                state[key] = as_int(state[key])
        return state

    def point(self, fraction):
        """Viewport (x, y) over the canvas, at a fraction of its width, halfway down."""
        box = self.page.rect(self.canvas)
        if not box:
            raise AssertionError(f"{self.section} canvas.memview-curve has no box (hidden?)")
        return box["left"] + box["width"] * fraction, box["top"] + box["height"] / 2

    def width(self):
        return self.page.rect(self.canvas)["width"]

    def hover(self, fraction):
        self.page.mouse_move(*self.point(fraction))
        return self.state()

    def click(self, fraction):
        self.page.click(*self.point(fraction))
        return self.state()


# The summary of the outermost closed <details> around an element (not counting the one a
# summary itself opens), or null.
CLOSED_SUMMARY = """e => {
    let out = null;
    for (let d = (e.tagName == 'SUMMARY' ? e.parentElement : e).parentElement.closest('details');
         d; d = d.parentElement.closest('details'))
        if (!d.open) out = d;
    return out && out.querySelector(':scope > summary');
}"""


def click(page, element):
    """Clicks an element (a JavaScript expression) as a reader would: first the summaries of the
    closed <details> around it, outermost first. False when something cannot be clicked."""
    summary = f"({CLOSED_SUMMARY})({element})"
    for _ in range(5):
        if not page.evaluate(f"!!{summary}"):
            return page.click_element(element)
        if not page.click_element(summary):
            return False
    return False


def visible_count(page, selector):
    return page.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})]"
                         ".filter(e => e.checkVisibility()).length")


# --- the checks, one per behaviour of docs/REPORT_PAGE.md ---

def check_process_view(page, label, index, module):
    """The selected process row is module `index` (the train step), whose section is shown."""
    rows = page.evaluate("""[...document.querySelectorAll('section.process tr')]
        .filter(r => r.querySelector('td'))
        .map(r => ({selected: r.classList.contains('selected'), index: r.dataset.moduleIndex}))""")
    selected = [i for i, r in enumerate(rows) if r["selected"]]
    if not expect(len(selected) == 1, f"{label}: {len(selected)} rows of section.process are "
                                      "tr.selected (want 1)"):
        return
    row = rows[selected[0]]
    expect(selected[0] == index - 1 and row["index"] in (None, str(index)),
           f"{label}: the selected process row is row {selected[0] + 1} (data-module-index "
           f"{row['index']}), not module {index}, the after-optimizations module with the "
           f"largest peak ({module['memory']['peak_bytes']} bytes)")
    section = page.evaluate(js_call("""sel => { const s = document.querySelector(sel);
        return s && {module: s.dataset.module, stage: s.dataset.stage,
                     shown: s.checkVisibility()}; }""", module_section(index)))
    expect(section and section["module"] == module["name"] and "after" in (section["stage"] or "")
           and section["shown"], f"{label}: {module_section(index)} is {section}, want "
                                 f"data-module {module['name']}, an after stage, shown")
    return f"train step is module {index}"


def check_process_click(page, label, index, count):
    """Clicking another process row selects it and shows its module's section."""
    other = 1 if index != 1 else 2
    if count < 2:
        return
    row = f"[...document.querySelectorAll('section.process tr')].filter(r => r.querySelector('td'))"
    click(page, f"{row}[{other - 1}]")
    state = page.evaluate(f"""(() => {{ const rows = {row};
        return {{selected: rows.map((r, i) => r.classList.contains('selected') ? i + 1 : 0)
                                .filter(i => i),
                 shown: document.querySelector({json.dumps(module_section(other))})
                        ?.checkVisibility()}}; }})()""")
    expect(state["selected"] == [other] and state["shown"],
           f"{label}: after clicking process row {other}: selected rows {state['selected']}, "
           f"its section shown: {state['shown']}")
    click(page, f"{row}[{index - 1}]")
    return f"selected process row {other}"


def module_section(index):
    return f'section.module[data-module-index="{index}"]'


def check_panel(label, state, spmdsim, dump, name, where):
    """What the panel lists at its position is analyze --at's live_at there."""
    position = state["position"]
    if not expect(position is not None and state["selected"] == position,
                  f"{label} {where}: span.memview-position {position!r} vs data-selected "
                  f"{state['selected']}"):
        return
    live = live_at(spmdsim, dump, name, position)
    expect(state["total"] == live["live_bytes"],
           f"{label} at {position}: span.memview-total data-bytes {state['total']}, "
           f"analyze --at: live_bytes {live['live_bytes']}")
    # The span may add to the name (its opcode, say); its first word is the instruction.
    expect((state["instruction"] or "").split(" ")[0] == live["instruction"],
           f"{label} at {position}: span.memview-instruction {state['instruction']!r}, "
           f"analyze --at: {live['instruction']!r}")
    buffers = live["buffers"]
    expect(state["count"] == len(buffers), f"{label} at {position}: table.memview-live "
                                           f"data-count {state['count']}, analyze --at: "
                                           f"{len(buffers)} buffers")
    rows = state["rows"] or []
    expect(len(rows) == min(len(buffers), LIVE_ROWS_SHOWN),
           f"{label} at {position}: {len(rows)} rows in table.memview-live for "
           f"{len(buffers)} buffers (at most {LIVE_ROWS_SHOWN} shown)")
    want = [[str(b["size_bytes"]), b["instruction"], b["index"], b["category"]]
            for b in buffers[:len(rows)]]
    mismatch = next((i for i, (r, w) in enumerate(zip(rows, want)) if r != w), None)
    if mismatch is not None:
        expect(False, f"{label} at {position}: table.memview-live row {mismatch} (data-bytes, "
                      f"-instruction, -index, -category) is {rows[mismatch]}, analyze --at's "
                      f"buffer {mismatch} is {want[mismatch]}")


def check_hover(view, label, spmdsim, dump, name):
    """At load the panel lists the peak; hovering lists the position under the pointer; each
    listing is analyze --at's."""
    state = view.state()
    expect(state["selected"] == state["peak"] and state["first"] == 0 and
           state["last"] == state["positions"] - 1,
           f"{label}: at load data-selected {state['selected']} (want the peak "
           f"{state['peak']}), range {state['first']}..{state['last']} (want 0.."
           f"{state['positions'] - 1})")
    check_panel(label, state, spmdsim, dump, name, "at load")
    shown = {}
    for where in HOVER_POINTS:
        state = view.hover(where)
        shown[where] = state["position"]
        check_panel(label, state, spmdsim, dump, name, f"hover at {where:.0%}")
    if not expect(shown[0.2] is not None and shown[0.8] is not None and shown[0.2] < shown[0.8],
                  f"{label}: hovering at 20 % and 80 % of the canvas shows positions "
                  f"{shown[0.2]} and {shown[0.8]} (want increasing)"):
        return
    state = hover_peak(view, shown[0.2], shown[0.8])
    per_pixel = (shown[0.8] - shown[0.2]) / (0.6 * view.width())
    expect(abs(state["position"] - state["peak"]) <= 2 * per_pixel + 1,
           f"{label}: pointing at the peak's x (from the 20 %/80 % positions) shows position "
           f"{state['position']}, the peak is {state['peak']} ({per_pixel:.1f} per pixel)")
    check_panel(label, state, spmdsim, dump, name, "hover at the peak")
    return (f"panel = analyze --at at {state['peak']} (load), {shown[0.2]}, {shown[0.8]}, "
            f"{state['position']} (hover)")


def hover_peak(view, at_20, at_80):
    """Points at the peak, the x found from the positions shown at 20 % and 80 % of the canvas
    (the plot may not fill it); a few corrections where a pixel spans several positions."""
    per_fraction = (at_80 - at_20) / 0.6
    fraction = 0.2 + (view.state()["peak"] - at_20) / per_fraction
    for _ in range(3):
        state = view.hover(fraction)
        if state["position"] == state["peak"]:
            break
        fraction += (state["peak"] - state["position"]) / per_fraction
    return state


def check_pin(view, label):
    """A click pins the position; a second click unpins, and the panel follows again."""
    pinned = view.click(0.3)["position"]
    moved = view.hover(0.7)
    expect(moved["position"] == pinned and moved["selected"] == pinned,
           f"{label}: clicked at 30 % (position {pinned}), moved to 70 %: the panel shows "
           f"{moved['position']} (data-selected {moved['selected']}), want the pinned one")
    view.click(0.7)
    following = view.hover(0.5)["position"]
    expect(following != pinned, f"{label}: after a second click (unpin) and a move to 50 %, "
                                f"the panel still shows the pinned position {pinned}")
    return f"pinned {pinned}"


def check_zoom(view, label):
    """The wheel and a drag narrow [data-first, data-last]; reset and peak buttons work."""
    state = view.state()
    whole = (0, state["positions"] - 1)
    page = view.page
    page.wheel(*view.point(0.5), -500)
    zoomed = view.state()
    expect(0 <= zoomed["first"] <= zoomed["last"] <= whole[1] and
           zoomed["last"] - zoomed["first"] < whole[1],
           f"{label}: wheel (deltaY -500) over the canvas: range {zoomed['first']}.."
           f"{zoomed['last']}, want narrower than {whole[0]}..{whole[1]}")
    reset = f"document.querySelector({json.dumps(view.section + ' button.memview-reset')})"
    expect(click(page, reset), f"{label}: no visible button.memview-reset")
    state = view.state()
    expect((state["first"], state["last"]) == whole,
           f"{label}: after button.memview-reset the range is {state['first']}.."
           f"{state['last']}, want {whole[0]}..{whole[1]}")
    (x0, y), (x1, _) = view.point(0.3), view.point(0.6)
    page.mouse("mouseMoved", x0, y)
    page.mouse("mousePressed", x0, y, button="left", buttons=1, clickCount=1)
    page.mouse("mouseMoved", (x0 + x1) / 2, y, button="left", buttons=1)
    page.mouse("mouseMoved", x1, y, button="left", buttons=1)
    page.mouse("mouseReleased", x1, y, button="left", buttons=0, clickCount=1)
    page.settle()
    dragged = view.state()
    expect(dragged["first"] > 0 and dragged["last"] < whole[1] and
           dragged["first"] < dragged["last"],
           f"{label}: a drag from 30 % to 60 % of the canvas: range {dragged['first']}.."
           f"{dragged['last']}, want inside {whole[0]}..{whole[1]}")
    click(page, reset)
    peak = f"document.querySelector({json.dumps(view.section + ' button.memview-peak')})"
    view.hover(0.1)
    expect(click(page, peak), f"{label}: no visible button.memview-peak")
    state = view.state()
    expect(state["selected"] == state["peak"] and state["position"] == state["peak"],
           f"{label}: after button.memview-peak data-selected {state['selected']}, "
           f"span.memview-position {state['position']}, want the peak {state['peak']}")
    click(page, reset)
    return (f"zoomed to {zoomed['first']}..{zoomed['last']} (wheel), "
            f"{dragged['first']}..{dragged['last']} (drag)")


SORT_CANDIDATES = """section => [...document.querySelectorAll(section + ' table.sortable')]
    .map((table, t) => {
        if (table.classList.contains('rng-groups')) return null;  // groups carry member rows
        const head = table.tHead && table.tHead.rows[table.tHead.rows.length - 1];
        const rows = [...table.tBodies].flatMap(b => [...b.rows]);
        if (!head || rows.length < 2) return null;
        const numeric = th => {
            const values = rows.filter(r => r.cells.length > th.cellIndex)
                               .map(r => r.cells[th.cellIndex].dataset.sort);
            return values.every(v => v !== undefined && /^-?[0-9.]+(e[-+]?[0-9]+)?$/i.test(v)) &&
                new Set(values).size > 1;
        };
        // A size column where there is one, else the first that sorts by numbers.
        const ths = [...head.cells].filter(numeric);
        const th = ths.find(th => /size|bytes/i.test(th.textContent)) || ths[0];
        return th ? {table: t, column: th.cellIndex, name: th.textContent.trim(),
                     id: table.id || table.className} : null;
    }).filter(c => c)"""

SORT_STATE = """(section, t, column) => {
    const table = document.querySelectorAll(section + ' table.sortable')[t];
    const head = table.tHead.rows[table.tHead.rows.length - 1];
    return {aria: head.cells[column].getAttribute('aria-sort'),
            values: [...table.tBodies].flatMap(b => [...b.rows])
                .filter(r => r.cells.length > column)
                .map(r => r.cells[column].dataset.sort)};
}"""


def check_sort(page, label, section):
    """Each sortable table with a numeric data-sort column sorts by it, both ways (the RNG
    groups left out: a group's member rows move with it)."""
    candidates = page.evaluate(js_call(SORT_CANDIDATES, section))
    expect(candidates, f"{label}: no table.sortable with a data-sort column to sort")
    for c in candidates:
        header = (f"document.querySelectorAll({json.dumps(section + ' table.sortable')})"
                  f"[{c['table']}].tHead.rows[0].parentNode.lastElementChild.cells[{c['column']}]")
        orders = []
        for clicks in (1, 2):
            click(page, header)
            state = page.evaluate(js_call(SORT_STATE, section, c["table"], c["column"]))
            values = [float(v) for v in state["values"]]
            want = {"ascending": sorted(values), "descending": sorted(values, reverse=True)}
            what = f"{label}: table.{c['id']} header {c['name']!r} after {clicks} click(s)"
            if expect(state["aria"] in want, f"{what}: aria-sort is {state['aria']!r}"):
                expect(values == want[state["aria"]],
                       f"{what}: rows not {state['aria']} by data-sort: {state['values'][:8]}")
            orders.append(state["aria"])
        expect(len(set(orders)) == 2, f"{label}: table.{c['id']} header {c['name']!r}: a second "
                                      f"click did not reverse the order ({orders})")
    return "sorted " + ", ".join(f"#{c['id']} by {c['name']}" for c in candidates)


FILTER_STATE = """(section, i) => {
    const input = document.querySelectorAll(section + ' input.table-filter')[i];
    const table = document.getElementById(input.dataset.for);
    if (!table) return {id: input.dataset.for, missing: true};
    const rows = [...table.tBodies].flatMap(b => [...b.rows]);
    return {shown: table.dataset.shown, id: table.id, rng: table.classList.contains('rng-groups'),
            texts: rows.map(r => r.textContent),
            visible: rows.map(r => r.checkVisibility()),
            cells: rows.flatMap(r => [...r.cells].map(c => c.textContent.trim()))};
}"""


def filter_text(texts, cells):
    """A cell's text found in some rows but not all, to type into the filter; one with letters
    where there is one (typed in the other case, it tests that case does not matter)."""
    lowered = [t.lower() for t in texts]
    fits = [c for c in cells if 3 <= len(c) <= 40 and 0 < sum(c.lower() in t for t in lowered)
            < len(texts)]
    return next((c for c in fits if c.swapcase() != c), fits[0] if fits else None)


def check_filter(page, label, section):
    """Typing into each table filter leaves the rows that contain the text (in any case) and
    data-shown counts them; clearing it shows every row again. (The RNG groups' filter is left
    out: their member rows are hidden until a group is opened.)"""
    count = page.evaluate(js_call("s => document.querySelectorAll(s + ' input.table-filter')"
                                  ".length", section))
    expect(count, f"{label}: no input.table-filter in the module")
    filtered = []
    for i in range(count):
        state = page.evaluate(js_call(FILTER_STATE, section, i))
        if not expect(not state.get("missing"), f"{label}: input.table-filter[data-for="
                                                 f"{state['id']}]: no table #{state['id']}"):
            continue
        text = filter_text(state["texts"], state["cells"])
        if state["rng"] or text is None:
            continue
        field = js_call("(s, i) => document.querySelectorAll(s + ' input.table-filter')[i]",
                        section, i)
        expect(click(page, field), f"{label}: input.table-filter for #{state['id']} "
                                          "has no box to click")
        typed = text.swapcase()
        page.insert_text(typed)
        filtered.append(f"#{state['id']} by {typed!r}")
        after = page.evaluate(js_call(FILTER_STATE, section, i))
        shown = [t for t, v in zip(after["texts"], after["visible"]) if v]
        holding = [t for t in after["texts"] if text.lower() in t.lower()]
        what = f"{label}: #{state['id']} filtered by {typed!r}"
        expect(all(text.lower() in t.lower() for t in shown),
               f"{what}: a visible row lacks the text")
        expect(len(shown) == len(holding),
               f"{what}: {len(shown)} rows visible, {len(holding)} hold the text")
        expect(as_int(after["shown"]) == len(shown),
               f"{what}: data-shown {after['shown']!r}, {len(shown)} rows visible")
        page.evaluate(f"(f => {{ f.value = ''; f.dispatchEvent(new Event('input', "
                      f"{{bubbles: true}})); }})({field})")
        page.settle()
        cleared = page.evaluate(js_call(FILTER_STATE, section, i))
        expect(as_int(cleared["shown"]) == len(cleared["texts"]) == sum(cleared["visible"]),
               f"{label}: #{state['id']} with its filter cleared: data-shown "
               f"{cleared['shown']!r}, {sum(cleared['visible'])} of {len(cleared['texts'])} "
               "rows visible")
    return "filtered " + ", ".join(filtered)


FINDING = """(section, i) => {
    const d = document.querySelectorAll(section + ' details.finding')[i];
    const body = [...d.childNodes].filter(n => n.nodeName != 'SUMMARY')
                                  .map(n => n.innerText || n.textContent).join(' ');
    return {open: d.open, summary: d.querySelector('summary').textContent.trim(),
            body: d.open ? body : '', links: d.querySelectorAll('a.show-position').length};
}"""
# A source location as a finding shows it: a file name with an extension, a colon, a line.
SOURCE_LOCATION = re.compile(r"[\w./-]+\.[A-Za-z]+:\d+")


def check_findings(page, label, section, view, expected):
    """Clicking a finding's summary opens it and shows a source location; clicking an
    a.show-position selects its position in the memory view and scrolls it into sight."""
    count = page.evaluate(js_call("s => document.querySelectorAll(s + ' details.finding').length",
                                  section))
    expect(count or not expected, f"{label}: no details.finding in the module (its RNG sites "
                                  "make findings)")
    for i in range(count):
        before = page.evaluate(js_call(FINDING, section, i))
        summary = js_call("(s, i) => document.querySelectorAll(s + ' details.finding')[i]"
                          ".querySelector('summary')", section, i)
        expect(not before["open"], f"{label}: details.finding {i} is open before a click")
        click(page, summary)
        after = page.evaluate(js_call(FINDING, section, i))
        what = f"{label}: details.finding {i} ({after['summary'][:60]!r})"
        if expect(after["open"], f"{what}: not open after clicking its summary"):
            expect(SOURCE_LOCATION.search(after["body"]),
                   f"{what}: opened, it shows no source location (file.ext:line): "
                   f"{after['body'][:120]!r}")
    link = js_call("s => document.querySelector(s + ' a.show-position')", section)
    position = page.evaluate(f"({link})?.dataset.position ?? null")
    if position is None:
        return f"opened {count} findings"
    click(page, link)
    state = view.state()
    expect(state["selected"] == as_int(position) and state["position"] == as_int(position),
           f"{label}: after clicking a.show-position[data-position={position}]: data-selected "
           f"{state['selected']}, span.memview-position {state['position']}")
    in_sight = page.wait_for(js_call("""s => { const r = document.querySelector(s + ' div.memview')
        .getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }""", section), 2)
    expect(in_sight, f"{label}: a.show-position did not scroll the memory view into sight")
    return f"opened {count} findings, followed a.show-position to {position}"


def check_rng_groups(page, label, section):
    """Clicking an RNG group row shows its member rows, data-sites of them."""
    table = section + " table.rng-groups"
    if not page.evaluate(f"!!document.querySelector({json.dumps(table)})"):
        return
    members = table + " tr.rng-member"
    expect(visible_count(page, members) == 0, f"{label}: tr.rng-member rows visible before "
                                              "any group is clicked")
    group = f"document.querySelector({json.dumps(table + ' tr.rng-group')})"
    sites = as_int(page.evaluate(f"({group})?.dataset.sites ?? null"))
    if not expect(sites, f"{label}: table.rng-groups has no tr.rng-group with data-sites"):
        return
    click(page, group)
    shown = visible_count(page, members)
    expect(shown == sites, f"{label}: clicking the first tr.rng-group (data-sites {sites}) shows "
                           f"{shown} tr.rng-member rows")
    return f"opened an RNG group of {sites}"


def save_screenshot(page, path):
    """Writes a PNG of the viewport to path and checks it is one."""
    png = page.screenshot()
    with open(path, "wb") as f:
        f.write(png)
    expect(png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10000,
           f"{path}: no screenshot written")


def check_quiet(page, label):
    """The page logged nothing and loaded nothing but itself."""
    page.settle()
    expect(not page.console, f"{label}: console messages: {page.console[:3]}")
    others = [u for u in page.requests if not u.startswith(("data:", "blob:")) and u != page.url]
    expect(not others, f"{label}: the page loaded other resources: {others[:3]}")


def check_figures(page, spmdsim, dump):
    """The dp8 page holds analyze's peaks and the collectives' counts."""
    dom = page.evaluate("document.documentElement.outerHTML")
    tags, _, text = parse(dom)
    expect("svg" in tags and "table" in tags, "dp8: no table or svg element in the DOM")
    for module in run_json(spmdsim, "analyze", dump)["modules"]:
        peak = module["memory"]["peak_bytes"]
        expect(f'data-bytes="{peak}"' in dom and f"{peak} bytes" in text,
               f"dp8: peak {peak} of the {module['stage']} module not in the DOM")
    for module in run_json(spmdsim, "collectives", dump)["modules"]:
        count = len(module["collectives"]["ops"])
        expect(f'<span class="collective-count">{count}</span>' in dom,
               f"dp8: collective count {count} of the {module['stage']} module not in the DOM")


# --- the payload page ---

def hlo_with_payloads(text, buffer):
    """The module text with two op_names replaced: the all-reduce's (the collectives table) and
    that of the instruction `buffer` (a buffer of the live-at-peak table)."""
    def replace_op_name(text, start, value):
        begin = text.index('op_name="', start) + len('op_name="')
        end = begin
        while text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        return text[:begin] + value + text[end:], end

    text, _ = replace_op_name(text, text.index(" all-reduce("), SCRIPT_PAYLOAD)
    # Inside an HLO string a quote is written \".
    text, _ = replace_op_name(text, text.index(f"%{buffer} = "), IMG_PAYLOAD.replace('"', '\\"'))
    return text


def write_payload_page(spmdsim, dump, tmp):
    """Reports a copy of dp8's after-optimizations module with payload op_names; its path."""
    name = "module_0000.jit_train_step.cpu_after_optimizations.txt"
    module = run_json(spmdsim, "analyze", os.path.join(dump, name + ".gz"))["modules"][0]
    buffer = next(b["instruction"] for b in module["memory"]["live_at_peak"]
                  if b["kind"] == "temp" and b["op_name"])
    with gzip.open(os.path.join(dump, name + ".gz"), "rt") as f:
        hlo = hlo_with_payloads(f.read(), buffer)
    os.makedirs(os.path.join(tmp, "payload"))
    with open(os.path.join(tmp, "payload", name), "w") as f:
        f.write(hlo)
    page = os.path.join(tmp, "payload.html")
    subprocess.run([spmdsim, "report", os.path.join(tmp, "payload", name), "-o", page],
                   check=True, timeout=60)
    return page


def script_types(attributes):
    """The type of each script element: "ours" (run) or "json" (application/json data)."""
    return ["json" if (a.get("type") or "").lower() == "application/json" else
            "ours" if (a.get("type") or "").lower() in ("", "text/javascript", "module") else
            a.get("type") for a in attributes]


DOM_SCRIPTS = """() => ({
    scripts: [...document.scripts].map(s => ({type: s.getAttribute('type')})),
    images: document.images.length,
    badJson: [...document.querySelectorAll('script[type="application/json"]')].filter(s => {
        try { JSON.parse(s.textContent); return false; } catch (e) { return true; } }).length,
})"""


def check_payload_dom(page, label, want_scripts):
    """The DOM has the source's script elements (ours and JSON that parses), no img."""
    state = page.evaluate(js_call(DOM_SCRIPTS))
    expect(script_types(state["scripts"]) == want_scripts,
           f"payload {label}: script elements {script_types(state['scripts'])}, the source's "
           f"are {want_scripts}")
    expect(state["images"] == 0, f"payload {label}: an <img> element is in the DOM")
    expect(state["badJson"] == 0, f"payload {label}: {state['badJson']} application/json "
                                  "script blocks do not parse")


def check_payload(binary, spmdsim, dump, tmp, artifacts):
    """The op_name payloads are shown as text, never run or turned into elements."""
    path = write_payload_page(spmdsim, dump, tmp)
    with open(path) as f:
        tags, by_tag, _ = parse(f.read())
    want_scripts = script_types(by_tag.get("script", []))
    expect(want_scripts.count("ours") == 1 and set(want_scripts) <= {"ours", "json"},
           f"payload: the source's script elements are {want_scripts}, want one of ours and "
           "application/json data")
    expect("img" not in tags, "payload: an <img> tag in the page's source")
    with cdp_pipe.Browser(binary) as browser:
        page = browser.new_page("file://" + path)
        check_payload_dom(page, "after load", want_scripts)
        panel = page.evaluate("document.querySelector('table.memview-live')?.textContent ?? ''")
        expect(IMG_PAYLOAD[1:] in panel, "payload: the <img> op_name is not shown as text in "
                                         "table.memview-live at the peak")
        view = MemView(page, module_section(1))
        if view.state():
            for where in HOVER_POINTS:
                view.hover(where)
        save_screenshot(page, os.path.join(artifacts, "payload.png"))
        check_payload_dom(page, "after hovering", want_scripts)
        text = page.evaluate("""(() => { const body = document.body.cloneNode(true);
            body.querySelectorAll('script, style').forEach(e => e.remove());
            return body.textContent; })()""")
        expect(SCRIPT_PAYLOAD in text, "payload: the <script> op_name is not shown as text")
        expect(IMG_PAYLOAD[1:] in text, "payload: the <img> op_name is not shown as text")
        check_quiet(page, "payload")


# --- one report, start to end ---

def check_report(binary, spmdsim, testdata, label, folder, tmp, artifacts, figures):
    """Writes the report of a dump and runs every check of the module docstring on it; returns
    the screenshot's path."""
    dump = os.path.join(testdata, "dumps", folder)
    path = os.path.join(tmp, label + ".html")
    subprocess.run([spmdsim, "report", dump, "-o", path], check=True, timeout=60)
    analysis = run_json(spmdsim, "analyze", dump)
    index, module = train_step(analysis)
    section = module_section(index)
    png = os.path.join(artifacts, f"{label}_{folder}.png")
    with cdp_pipe.Browser(binary) as browser:
        page = browser.new_page("file://" + path)
        notes = [check_process_view(page, label, index, module)]
        view = MemView(page, section)
        page.wait_for(js_call("s => document.querySelector(s + ' span.memview-total')"
                              "?.dataset.bytes", section), 5)
        memview = view.state()
        if expect(memview, f"{label}: no div.memview in {section}"):
            notes.append(check_hover(view, label, spmdsim, dump, module["name"]))
        save_screenshot(page, png)
        if memview:
            notes += [check_pin(view, label), check_zoom(view, label)]
        notes += [check_sort(page, label, section), check_filter(page, label, section),
                  check_findings(page, label, section, view, expected=label != "cpu"),
                  check_rng_groups(page, label, section),
                  check_process_click(page, label, index, len(analysis["modules"]))]
        if figures:
            check_figures(page, spmdsim, dump)
        check_quiet(page, label)
    print(f"{label}: " + "; ".join(n for n in notes if n))
    return png


def check_probe(binary, tmp):
    """The capture works: a page that logs, alerts and throws is seen doing so."""
    probe = os.path.join(tmp, "probe.html")
    with open(probe, "w") as f:
        f.write('<!DOCTYPE html><p>probe</p><script>console.error("spmdsim-probe");'
                'alert("spmdsim-alert"); undefinedFunction();</script>')
    with cdp_pipe.Browser(binary) as browser:
        page = browser.new_page("file://" + probe)
        page.settle()
        seen = " | ".join(page.console)
        expect("spmdsim-probe" in seen and "spmdsim-alert" in seen and "undefinedFunction" in seen,
               f"console capture: the probe page's messages were not all seen: {seen!r}")


def guarded(what, check, *args):
    """Runs one page's checks; a protocol error or timeout fails that page, not the run."""
    try:
        return check(*args)
    except (cdp_pipe.CdpError, subprocess.SubprocessError, OSError, KeyError, TypeError,
            AssertionError) as error:
        where = [f for f in traceback.extract_tb(error.__traceback__)
                 if os.path.abspath(f.filename) == os.path.abspath(__file__)][-1]
        expect(False, f"{what}: stopped: {type(error).__name__}: {error} (line {where.lineno})")
        return None


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chromium")
    parser.add_argument("spmdsim")
    parser.add_argument("testdata")
    parser.add_argument("--artifacts", default=os.path.join(os.getcwd(),
                                                            "report_browser_artifacts"),
                        help="folder for the screenshots (default ./report_browser_artifacts)")
    parser.add_argument("--screenshot-out", help="copy the dp8 screenshot here")
    args = parser.parse_args(argv[1:])
    os.makedirs(args.artifacts, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        guarded("probe", check_probe, args.chromium, tmp)
        shots = {}
        for label, folder in DUMPS:
            shots[label] = guarded(label, check_report, args.chromium, args.spmdsim,
                                   args.testdata, label, folder, tmp, args.artifacts,
                                   label == "cpu")
        dp8 = os.path.join(args.testdata, "dumps", DUMPS[0][1])
        guarded("payload", check_payload, args.chromium, args.spmdsim, dp8, tmp,
                args.artifacts)
    if args.screenshot_out and shots["cpu"] and not failures:
        shutil.copyfile(shots["cpu"], args.screenshot_out)
    print(f"report_browser_test: {'ok' if not failures else f'{len(failures)} failure(s)'} "
          f"in {time.monotonic() - started:.1f} s; screenshots in {args.artifacts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
