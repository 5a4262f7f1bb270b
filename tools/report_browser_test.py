#!/usr/bin/env python3
"""Opens `spmdsim report` pages in headless Chromium and checks what a reader would get.

  report_browser_test.py CHROMIUM SPMDSIM TESTDATA [--screenshot-out PNG]

For the report of testdata/dumps/dp8_partitionable_remat and for a copy of its after-optimizations
module whose op_names hold HTML/JS payloads, it loads the page with
`--headless --dump-dom` (and `--screenshot`) and asserts:
  - the page logs nothing to the console (Chromium's --enable-logging=stderr prints each console
    message and uncaught error as an `INFO:CONSOLE` line; a probe page first shows the capture
    works, so a silent pass cannot come from a broken capture);
  - the dumped DOM holds the peak bytes `spmdsim analyze --format json` reports and the collective
    count of `spmdsim collectives --format json`;
  - the payloads are text: no <script> or <img> element in the DOM, and the payload strings appear
    in its text;
  - the screenshot PNG was written.
--screenshot-out copies the dp8 screenshot there (docs/report_screenshot.png).
Standard library only; run by ctest (label "browser") when Chromium is found.
"""
import gzip
import html.parser
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

SCRIPT_PAYLOAD = "<script>alert(1)</script>"
IMG_PAYLOAD = '"><img src=x onerror=alert(1)>'

# Seconds one Chromium run may take; a page loads in about 2.
CHROMIUM_TIMEOUT_S = 20

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def chromium(binary, url, *flags):
    """Runs headless Chromium on url; returns (stdout, console lines of stderr)."""
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
               "--v=0", "--window-size=1400,2400", *flags, url]
    # Its own process group, so that a timeout ends the renderer processes too.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=CHROMIUM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        # An alert() left open blocks a headless page until it is killed.
        expect(False, f"{url}: Chromium timed out after {CHROMIUM_TIMEOUT_S} s (a script ran?)")
        return "", []
    console = [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return stdout, console


class Elements(html.parser.HTMLParser):
    """Collects start tags and the text of a document."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def parse(dom):
    parser = Elements()
    parser.feed(dom)
    return parser.tags, "".join(parser.text)


def run_json(spmdsim, *args):
    out = subprocess.run([spmdsim, *args, "--format", "json"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


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


def check_page(binary, page, png):
    url = "file://" + page
    dom, console = chromium(binary, url, "--dump-dom")
    expect(not console, f"{os.path.basename(page)}: console messages: {console[:3]}")
    _, shot_console = chromium(binary, url, "--screenshot=" + png, "--hide-scrollbars")
    expect(not shot_console, f"{os.path.basename(page)}: console messages while screenshotting")
    head = b""
    if os.path.exists(png):
        with open(png, "rb") as f:
            head = f.read(8)
    expect(head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 10000,
           f"{png}: no screenshot written")
    expect(dom.lstrip().lower().startswith("<!doctype html>") or "<html" in dom[:200],
           f"{page}: no DOM dumped")
    return dom


def main(argv):
    if len(argv) not in (4, 6):
        print(__doc__, file=sys.stderr)
        return 2
    binary, spmdsim, testdata = argv[1], argv[2], argv[3]
    screenshot_out = argv[5] if len(argv) == 6 and argv[4] == "--screenshot-out" else None
    dump = os.path.join(testdata, "dumps", "dp8_partitionable_remat")
    with tempfile.TemporaryDirectory() as tmp:
        # The capture works: a page that logs and throws is seen.
        probe = os.path.join(tmp, "probe.html")
        with open(probe, "w") as f:
            f.write('<!DOCTYPE html><p>probe</p><script>console.error("spmdsim-probe");'
                    "undefinedFunction();</script>")
        _, console = chromium(binary, "file://" + probe, "--dump-dom")
        expect(any("spmdsim-probe" in line for line in console) and
               any("Uncaught" in line for line in console),
               "console capture: the probe page's messages were not seen")

        # The dp8 report: the figures of analyze and collectives, in the DOM.
        page = os.path.join(tmp, "dp8.html")
        subprocess.run([spmdsim, "report", dump, "-o", page], check=True)
        png = os.path.join(tmp, "dp8.png")
        dom = check_page(binary, page, png)
        tags, text = parse(dom)
        expect("svg" in tags and "table" in tags, "dp8: no table or svg element in the DOM")
        for module in run_json(spmdsim, "analyze", dump)["modules"]:
            peak = module["memory"]["peak_bytes"]
            expect(f'data-bytes="{peak}"' in dom and f"{peak} bytes" in text,
                   f"dp8: peak {peak} of the {module['stage']} module not in the DOM")
        for module in run_json(spmdsim, "collectives", dump)["modules"]:
            count = len(module["collectives"]["ops"])
            expect(f'<span class="collective-count">{count}</span>' in dom,
                   f"dp8: collective count {count} of the {module['stage']} module not in the DOM")
        if screenshot_out and not failures:
            shutil.copyfile(png, screenshot_out)

        # The payload dump: the op_names are shown as text, never run.
        payload_dir = os.path.join(tmp, "payload")
        os.mkdir(payload_dir)
        name = "module_0000.jit_train_step.cpu_after_optimizations.txt"
        module = run_json(spmdsim, "analyze", os.path.join(dump, name + ".gz"))["modules"][0]
        buffer = next(b["instruction"] for b in module["memory"]["live_at_peak"]
                      if b["kind"] == "temp" and b["op_name"])
        with gzip.open(os.path.join(dump, name + ".gz"), "rt") as f:
            hlo = hlo_with_payloads(f.read(), buffer)
        with open(os.path.join(payload_dir, name), "w") as f:
            f.write(hlo)
        page = os.path.join(tmp, "payload.html")
        subprocess.run([spmdsim, "report", os.path.join(payload_dir, name), "-o", page],
                       check=True)
        with open(page) as f:
            source = f.read()
        expect("<script" not in source and "<img" not in source,
               "payload: markup from the dump reached the page unescaped")
        dom = check_page(binary, page, os.path.join(tmp, "payload.png"))
        tags, text = parse(dom)
        expect("script" not in tags, "payload: a <script> element is in the DOM")
        expect("img" not in tags, "payload: an <img> element is in the DOM")
        expect(SCRIPT_PAYLOAD in text, "payload: the <script> op_name is not shown as text")
        expect("><img src=x onerror=alert(1)>" in text,
               "payload: the <img> op_name is not shown as text")
    print("report_browser_test:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
