"""A minimal Chrome DevTools protocol client over Chromium's --remote-debugging-pipe.

Standard library only. Chromium reads protocol messages (JSON, each ended by a NUL byte) on its
file descriptor 3 and writes replies and events on its file descriptor 4. `Browser` starts a
headless Chromium in its own process group with those two pipes, `Page` is one tab attached with
a flat session (commands carry its sessionId). Every wait has a deadline: a command that gets no
reply in time raises `CdpTimeout`, and `Browser.close` kills the process group whatever state the
browser is in, so a hung renderer cannot hang the caller.

    with Browser("/usr/bin/chromium") as browser:
        page = browser.new_page("file:///tmp/page.html")
        page.evaluate("document.title")
        page.mouse_move(100, 200)
        png = page.screenshot()
        print(page.console)  # console messages and uncaught exceptions seen so far
"""
import base64
import fcntl
import json
import os
import select
import signal
import subprocess
import tempfile
import time

# Seconds one protocol command may take before the browser is deemed hung.
COMMAND_TIMEOUT_S = 10
# Seconds a page may take to fire its load event.
LOAD_TIMEOUT_S = 20


class CdpError(Exception):
    """A protocol command answered with an error, or the browser went away."""


class CdpTimeout(CdpError):
    """No reply (or awaited event) within the deadline."""


def _move_to_fd(fd, target):
    """In the child: makes `target` a copy of fd (fd numbers may collide, hence the detour)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.dup2(high, target)
    os.close(high)


class Browser:
    """A headless Chromium driven through the pipe; a context manager that always kills it."""

    def __init__(self, binary, width=1400, height=1000):
        self.width, self.height = width, height
        self._next_id = 0
        self._buffer = b""
        self._events = []  # (sessionId, method, params), unconsumed, in arrival order
        self._profile = tempfile.TemporaryDirectory(prefix="cdp-profile-")
        self._stderr = tempfile.TemporaryFile()
        # Our ends stay here; the browser's ends become its fds 3 (commands in) and 4 (replies out).
        command_read, self._command_write = os.pipe()
        self._reply_read, reply_write = os.pipe()

        def child_fds():
            _move_to_fd(command_read, 3)
            _move_to_fd(reply_write, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                 f"--window-size={width},{height}", "--hide-scrollbars", "--mute-audio",
                 "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                 "--disable-background-networking", "--disable-sync",
                 "--user-data-dir=" + self._profile.name, "about:blank"]
        # Its own process group (start_new_session), so that closing ends the renderers too.
        # preexec_fn runs before any thread of ours exists.
        try:
            self.process = subprocess.Popen([binary, *flags], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=self._stderr,
                                            pass_fds=(3, 4), preexec_fn=child_fds,
                                            start_new_session=True)
        except OSError:
            for fd in (self._command_write, self._reply_read):
                os.close(fd)
            self._profile.cleanup()
            raise
        finally:
            os.close(command_read)
            os.close(reply_write)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stderr_tail(self, lines=10):
        """The last lines Chromium wrote to stderr, for a failure message."""
        self._stderr.seek(0)
        return "\n".join(self._stderr.read().decode(errors="replace").splitlines()[-lines:])

    # --- the wire ---

    def _write(self, message):
        data = json.dumps(message).encode() + b"\0"
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while data:
            _, writable, _ = select.select([], [self._command_write], [],
                                           max(0, deadline - time.monotonic()))
            if not writable:
                raise CdpTimeout("the browser does not read its command pipe")
            data = data[os.write(self._command_write, data):]

    def _read_message(self, deadline):
        """The next message from the browser, or CdpTimeout at the deadline."""
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([self._reply_read], [], [], max(0, remaining))
            if not readable:
                raise CdpTimeout("no message from the browser in time")
            chunk = os.read(self._reply_read, 1 << 20)
            if not chunk:
                raise CdpError("the browser closed its pipe (exited?)\n" + self.stderr_tail())
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _post(self, method, params, session):
        """Writes one command without waiting for its reply (a late reply is ignored)."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._write(message)

    def _queue(self, event):
        """Keeps an event for its page; dismisses a JavaScript dialog at once, since an open
        alert() blocks the page's scripts and with them the reply awaited now."""
        session, method, params = event.get("sessionId"), event["method"], event.get("params", {})
        if method == "Page.javascriptDialogOpening":
            self._post("Page.handleJavaScriptDialog", {"accept": False}, session)
        self._events.append((session, method, params))

    def send(self, method, params=None, session=None, timeout=COMMAND_TIMEOUT_S):
        """Sends one command and returns its result; events that arrive meanwhile are queued."""
        self._post(method, params, session)
        deadline = time.monotonic() + timeout
        awaited = self._next_id
        while True:
            try:
                reply = self._read_message(deadline)
            except CdpTimeout:
                raise CdpTimeout(f"{method}: no reply in {timeout} s (the page hangs?)") from None
            if "id" not in reply:
                self._queue(reply)
            elif reply["id"] == awaited:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})

    def events(self, session, method=None):
        """Takes the queued events of a session (of one method, where given) off the queue."""
        taken, kept = [], []
        for event in self._events:
            (taken if event[0] == session and method in (None, event[1]) else kept).append(event)
        self._events = kept
        return [(name, params) for _, name, params in taken]

    def wait_event(self, session, method, timeout):
        """Waits for an event of a session; returns its params (CdpTimeout when none comes)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, (event_session, name, params) in enumerate(self._events):
                if event_session == session and name == method:
                    del self._events[i]
                    return params
            message = self._read_message(deadline)
            if "id" not in message:
                self._queue(message)

    # --- tabs and shutdown ---

    def new_page(self, url):
        """Opens a tab, attaches to it, enables the domains a test reads, loads url."""
        # A tab of the browser's window, so of its --window-size.
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        # The viewport exactly width x height (the window's includes the browser's own bars).
        page.send("Emulation.setDeviceMetricsOverride", {"width": self.width,
                                                         "height": self.height,
                                                         "deviceScaleFactor": 1, "mobile": False})
        page.navigate(url)
        return page

    def close(self):
        """Asks the browser to quit, then kills its process group; safe to call twice."""
        if self.process.poll() is None:
            try:
                self.send("Browser.close", timeout=5)
            except (CdpError, OSError):
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        for fd in (self._command_write, self._reply_read):
            try:
                os.close(fd)
            except OSError:
                pass
        self._command_write = self._reply_read = -1
        self._profile.cleanup()


class Page:
    """One attached tab: evaluation, real input events, screenshots, and what it logged.

    `console` lists, as text, every console API call, uncaught exception and JavaScript dialog
    (the browser dismisses dialogs at once); `requests` lists the URLs the page loaded."""

    def __init__(self, browser, target, session):
        self.browser, self.target, self.session = browser, target, session
        self.console = []
        self.requests = []
        self.url = None
        for domain in ("Page", "Runtime", "Network"):
            self.send(domain + ".enable")

    def send(self, method, params=None, timeout=COMMAND_TIMEOUT_S):
        result = self.browser.send(method, params, self.session, timeout)
        self._collect()
        return result

    def _collect(self):
        """Moves this tab's queued events into console and requests."""
        for method, params in self.browser.events(self.session):
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", a.get("type"))))
                                for a in params.get("args", []))
                self.console.append(f"console.{params.get('type')}: {text}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                description = details.get("exception", {}).get("description", details.get("text"))
                self.console.append(f"uncaught: {description}")
            elif method == "Page.javascriptDialogOpening":
                self.console.append(f"dialog {params.get('type')}: {params.get('message')}")
            elif method == "Network.requestWillBeSent":
                self.requests.append(params["request"]["url"])

    def navigate(self, url):
        """Loads url and waits for its load event."""
        self.url = url
        self.browser.events(self.session)  # drop what an earlier document sent
        error = self.send("Page.navigate", {"url": url}).get("errorText")
        if error:
            raise CdpError(f"cannot load {url}: {error}")
        self.browser.wait_event(self.session, "Page.loadEventFired", LOAD_TIMEOUT_S)
        self._collect()

    def evaluate(self, expression, await_promise=False):
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CdpError(f"evaluate {expression[:80]!r}: "
                           f"{details.get('exception', {}).get('description', details['text'])}")
        return result["result"].get("value")

    def settle(self):
        """Waits two animation frames (at most 0.5 s), so that handlers that draw have drawn."""
        self.evaluate("new Promise(done => { setTimeout(done, 500);"
                      " requestAnimationFrame(() => requestAnimationFrame(done)); })",
                      await_promise=True)

    def wait_for(self, expression, timeout=3):
        """Polls a JavaScript expression until it is truthy; returns its last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.05)

    # --- input, as a reader's mouse and keyboard produce it ---

    def mouse(self, kind, x, y, **extra):
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    def mouse_move(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.settle()

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        for kind in ("mousePressed", "mouseReleased"):
            self.mouse(kind, x, y, button="left", buttons=1 if kind == "mousePressed" else 0,
                       clickCount=1)
        self.settle()

    def wheel(self, x, y, delta_y):
        self.mouse("mouseWheel", x, y, deltaX=0, deltaY=delta_y)
        self.settle()

    def insert_text(self, text):
        """Types text into the focused element (one input event, as an IME commit)."""
        self.send("Input.insertText", {"text": text})
        self.settle()

    def rect(self, element):
        """The viewport rectangle {left, top, width, height, hit} of an element, scrolled into
        view (centred) first; None when there is no such element or it has no box. `element` is
        a JavaScript expression, such as `document.querySelector("canvas")`; `hit` says whether
        a click at the centre lands on it (nothing covers it there)."""
        return self.evaluate(f"""(() => {{
            const e = {element};
            if (!e) return null;
            e.scrollIntoView({{block: 'center', inline: 'nearest', behavior: 'instant'}});
            const r = e.getBoundingClientRect();
            const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return r.width > 0 && r.height > 0 ?
                {{left: r.left, top: r.top, width: r.width, height: r.height,
                  hit: !!at && e.contains(at)}} : null;
        }})()""")

    def click_element(self, element):
        """Clicks the centre of an element (a JavaScript expression) with the mouse; False,
        without clicking, when it has no box or something else lies over its centre."""
        box = self.rect(element)
        if not box or not box["hit"]:
            return False
        self.click(box["left"] + box["width"] / 2, box["top"] + box["height"] / 2)
        return True

    def screenshot(self):
        """A PNG of the viewport, as bytes."""
        return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self):
        self.browser.send("Target.closeTarget", {"targetId": self.target})
