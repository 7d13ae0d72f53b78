#!/usr/bin/env python3
"""Loads a page in headless Chromium and reports what it shows, through the
DevTools protocol over a pipe (no network port, no extra package).

    look.py URL [--scale S] [--width W] [--height H] [--evaluate FILE]
            [--moving SELECTOR ...] [--screenshot PNG]

Prints one JSON object: `value`, what the expression in FILE (an async
function body) returned once the page had loaded; `moving`, for each
SELECTOR, whether two screenshots of its element 300 ms apart differ
(retried a few times, bounded); `screenshot`, the page's PNG written.
"""
import argparse, base64, json, os, shutil, subprocess, sys, tempfile, time

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--scale", type=float, default=1)
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=3000)
    parser.add_argument("--evaluate")
    parser.add_argument("--moving", action="append", default=[])
    parser.add_argument("--screenshot")
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    args = parser.parse_args()
    profile = tempfile.mkdtemp(prefix="look-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # Chromium reads commands on descriptor 3 and answers on 4 (put there after the fork; nothing closed after
    # that, or they would go too).
    def child():
        # Through copies, so that neither end is overwritten before it is moved; dup2 makes them inheritable.
        reading, writing = os.dup(to_browser_r), os.dup(from_browser_w)
        os.dup2(reading, 3)
        os.dup2(writing, 4)
    browser = subprocess.Popen(
        [args.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
         "--user-data-dir=" + profile, "--no-first-run", "--hide-scrollbars", "--mute-audio",
         "--disable-background-networking", "--disable-component-update", "about:blank"],
        preexec_fn=child, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_browser_r)
    os.close(from_browser_w)
    out = os.fdopen(to_browser_w, "wb", buffering=0)
    incoming = os.fdopen(from_browser_r, "rb", buffering=0)
    pending = b""
    counter = [0]
    events = []
    deadline = time.monotonic() + 60

    def read_message():
        nonlocal pending
        while b"\0" not in pending:
            if time.monotonic() > deadline:
                raise SystemExit("look.py: the browser did not answer within 60 s")
            chunk = incoming.read(65536)
            if not chunk:
                raise SystemExit("look.py: the browser closed its pipe")
            pending += chunk
        message, pending = pending.split(b"\0", 1)
        return json.loads(message)

    def send(method, params=None, session=None):
        counter[0] += 1
        message = {"id": counter[0], "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        out.write(json.dumps(message).encode() + b"\0")
        while True:
            answer = read_message()
            if answer.get("id") == counter[0]:
                if "error" in answer:
                    raise SystemExit("look.py: %s: %s" % (method, answer["error"]))
                return answer["result"]
            events.append(answer)

    def wait_event(name, session):
        while True:
            for index, event in enumerate(events):
                if event.get("method") == name and event.get("sessionId") == session:
                    del events[index]
                    return event
            events.append(read_message())

    try:
        targets = send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        send("Emulation.setDeviceMetricsOverride",
             {"width": args.width, "height": args.height, "deviceScaleFactor": args.scale, "mobile": False}, session)
        send("Page.enable", {}, session)
        send("Page.navigate", {"url": args.url}, session)
        wait_event("Page.loadEventFired", session)
        result = {}
        if args.evaluate:
            body = open(args.evaluate).read()
            value = send("Runtime.evaluate", {"expression": "(async () => {" + body + "})()", "awaitPromise": True,
                                              "returnByValue": True}, session)
            if "exceptionDetails" in value:
                raise SystemExit("look.py: the expression failed: %s" % json.dumps(value["exceptionDetails"]))
            result["value"] = value["result"].get("value")
        moving = {}
        for selector in args.moving:
            box = send("Runtime.evaluate", {"expression": "(() => { const r = document.querySelector(%s).getBoundingClientRect();"
                                            " return [r.x, r.y, r.width, r.height]; })()" % json.dumps(selector),
                                            "returnByValue": True}, session)["result"]["value"]
            clip = {"x": box[0], "y": box[1], "width": max(1, box[2]), "height": max(1, box[3]), "scale": 1}
            first = send("Page.captureScreenshot", {"format": "png", "clip": clip}, session)["data"]
            changed = False
            for _ in range(6):
                time.sleep(0.3)
                again = send("Page.captureScreenshot", {"format": "png", "clip": clip}, session)["data"]
                if again != first:
                    changed = True
                    break
            moving[selector] = changed
        result["moving"] = moving
        if args.screenshot:
            data = send("Page.captureScreenshot", {"format": "png"}, session)["data"]
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(data))
            result["screenshot"] = args.screenshot
        print(json.dumps(result))
    finally:
        try:
            send("Browser.close")
        except BaseException:
            pass
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
        shutil.rmtree(profile, ignore_errors=True)

main()
