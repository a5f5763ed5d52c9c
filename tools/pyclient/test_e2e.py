"""End to end against the real daemon (built by `swift build --product livebusd`; nothing is built here).

Skipped with a clear message when /work/main/.build/debug/livebusd (or $LIVEBUSD) is absent."""

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import livebus_client as lb  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
DAEMON = os.environ.get("LIVEBUSD") or os.path.join(ROOT, ".build", "debug", "livebusd")
SWIFT_CLI = os.path.join(os.path.dirname(DAEMON), "livebus")
CLIENT = os.path.join(HERE, "livebus_client.py")
STATUSES = ["created", "cooking", "awaitingPickup", "pickedUp", "delivering", "delivered"]
SKEW_MS = 90_000

HAVE_DAEMON = os.access(DAEMON, os.X_OK)
DAEMON_HAS_MEMORY = HAVE_DAEMON and "--memory" in subprocess.run(
    [DAEMON, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
SKIP_MESSAGE = ("no daemon binary at %s: build it with `swift build --product livebusd` (or set LIVEBUSD) to run "
                "the end-to-end tests" % DAEMON)


class Daemon:
    def __init__(self, *args):
        self.dir = tempfile.TemporaryDirectory(prefix="lbpy")
        self.socket = os.path.join(self.dir.name, "bus.sock")
        self.log_path = os.path.join(self.dir.name, "daemon.log")
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen([DAEMON, "--socket", self.socket] + list(args), stdout=self.log,
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("livebusd did not start: %s" % self.read_log())
            time.sleep(0.02)

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as handle:
            return handle.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        self.dir.cleanup()


def updates_of(client):
    return [r for r in client.records if r["type"] == "update"]


def parse_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@unittest.skipUnless(HAVE_DAEMON, SKIP_MESSAGE)
class EndToEndTests(unittest.TestCase):
    def start_daemon(self, *args):
        daemon = Daemon(*args)
        self.addCleanup(daemon.stop)
        return daemon

    def attach(self, daemon, *extra):
        return subprocess.Popen([sys.executable, CLIENT, "attach", "--socket", daemon.socket, "--verbose"] +
                                list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def assert_delivered_run(self, updates, before_ms, after_ms):
        self.assertTrue(updates, "no update lines")
        seqs = [r["seq"] for r in updates]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)), "seqs must be 1..N without gaps or duplicates")
        collapsed = [s for i, s in enumerate(r["status"] for r in updates)
                     if i == 0 or s != updates[i - 1]["status"]]
        self.assertEqual(collapsed, STATUSES)
        self.assertTrue(all(r["applied"] and r["reason"] is None for r in updates))
        self.assertEqual(updates[-1]["event"], "end")
        self.assertEqual(updates[0]["event"], "start")
        for record in updates:
            self.assertEqual(record["type"], "update")
            self.assertEqual(record["topic"], "orders/A1001")
            self.assertEqual(record["order"], "A1001")
            self.assertIn(record["delivery"], (None, "replay", "snapshot"))
            # the phone's clock is 90 s ahead: clientTime and etaTarget are on it, not on the server clock
            self.assertGreaterEqual(record["clientTime"], before_ms + SKEW_MS)
            self.assertLessEqual(record["clientTime"], after_ms + SKEW_MS)
            self.assertGreater(record["etaTarget"], before_ms + SKEW_MS - 1000)
            self.assertLess(record["etaTarget"], after_ms + SKEW_MS + 10_000)
            self.assertEqual(record["remainingMs"], max(0, record["etaTarget"] - record["clientTime"]))
        # delivered when the countdown reaches zero, within the error bound and a loop turn
        end = updates[-1]
        self.assertLess(abs(end["etaTarget"] - end["clientTime"]), 250)
        self.assertLess(end["uncertaintyMs"], 100)

    def test_demo_delivered_with_skew(self):
        daemon = self.start_daemon("--scenario", "demo-120s", "--time-scale", "40")
        before = int(time.time() * 1000)
        client = self.attach(daemon, "--clock-skew", "%dms" % SKEW_MS, "--exit-when", "delivered")
        out, err = client.communicate(timeout=60)
        after = int(time.time() * 1000)
        self.assertEqual(client.returncode, 0, err)
        records = parse_lines(out)
        updates = [r for r in records if r["type"] == "update"]
        self.assert_delivered_run(updates, before, after)
        for record in records:
            self.assertIn(record["type"], ("update", "stale", "reconvert", "sync"))
        # Sync-state lines (PROTOCOL.md §10): catching up, then live, on the phone's clock.
        states = [r["state"] for r in records if r["type"] == "sync"]
        self.assertEqual(states[:2], ["catchingUp", "live"], states)
        self.assertTrue(all(isinstance(r["clientTime"], int) for r in records if r["type"] == "sync"))
        self.assertIn("client said bye", daemon.read_log())
        self.assertNotIn("bad frame", err)

    def test_wrong_hello_time_is_corrected_by_probes(self):
        """A HELLO clientTime 400 ms off: the probes (answered before anything else) correct the estimate, and
        any conversion made with the HELLO offset is re-sent (`reconvert`) and taken without reconnecting."""
        daemon = self.start_daemon("--scenario", "demo-120s", "--time-scale", "40")
        time.sleep(0.6)  # let the first events be published, so they are converted with the HELLO offset
        client = lb.SessionClient(daemon.socket, clock=lb.SimClock(SKEW_MS), out=io.StringIO(), err=io.StringIO(),
                                  exit_when_delivered=True, hello_time_error_ms=400)
        self.assertEqual(client.run(), 0)
        self.assertEqual(client.connections, 1)
        updates = [r for r in client.records if r["type"] == "update"]
        self.assertEqual([r["seq"] for r in updates], list(range(1, len(updates) + 1)))
        # after the refresh, the shown ETA is on the probed clock again (not 400 ms off)
        self.assertLess(abs(updates[-1]["etaTarget"] - updates[-1]["clientTime"]), 250)

    def test_resume_after_lost_connections(self):
        daemon = self.start_daemon("--scenario", "demo-120s", "--time-scale", "20")
        before = int(time.time() * 1000)
        client = self.attach(daemon, "--clock-skew", "+90s", "--clock-drift", "200", "--exit-when", "delivered")
        # SIGUSR1 before the client installed its handler would kill it (a loaded machine can take over a second
        # to import and start it): wait until the daemon has the session, then drop the connection twice while
        # orders move (the run lasts 6 s)
        deadline = time.time() + 20
        while "session attached" not in daemon.read_log() and client.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        for delay in (0.6, 1.3):
            time.sleep(delay)
            if client.poll() is None:
                client.send_signal(signal.SIGUSR1)
        out, err = client.communicate(timeout=60)
        after = int(time.time() * 1000)
        self.assertEqual(client.returncode, 0, err)
        updates = [r for r in parse_lines(out) if r["type"] == "update"]
        self.assert_delivered_run(updates, before, after)
        self.assertNotIn("bad frame", err)
        self.assertEqual(err.count("dropping the connection"), 2, err)
        self.assertEqual(err.count(", resumed"), 2, err)
        self.assertEqual(daemon.read_log().count("session resumed"), 2)

    def test_posture_and_clock_reach_the_daemon(self):
        daemon = self.start_daemon()
        out = io.StringIO()
        client = lb.SessionClient(daemon.socket, name="pyduo", device="iphone-duo", fold_state="folded",
                                  clock=lb.SimClock(SKEW_MS, 0), out=out, err=io.StringIO(),
                                  posture_script=lb.parse_posture_script("0.3s:half-opened,0.6s:landscape"))
        thread = threading.Thread(target=client.run, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(client.stop)
        def pyduo():
            status = lb.admin_command(daemon.socket, "status")
            self.assertTrue(status["ok"], status)
            sessions = [s for s in status["data"]["sessions"] if s.get("name") == "pyduo"]
            self.assertLessEqual(len(sessions), 1, status)
            return sessions[0] if sessions else None

        def wait_for(done):  # polls the daemon's status; a loaded machine takes longer, nothing here is timed
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                session = pyduo()
                if session and done(session):
                    return session
                time.sleep(0.1)
            return pyduo()

        # the posture script's two steps, and the probe burst (8 samples 200 ms apart) well under way
        wait_for(lambda s: s["posture"].get("orientation") == "landscape" and s["clock"]["samples"] >= 5)
        client.set_posture(app_state="background")
        session = wait_for(lambda s: s["appState"] == "background")
        self.assertIsNotNone(session)
        self.assertEqual(session["client"], lb.CLIENT_NAME)
        self.assertEqual(session["device"], "iphone-duo")
        self.assertEqual(session["posture"], {"foldState": "half-opened", "orientation": "landscape"})
        self.assertEqual(session["appState"], "background")
        self.assertEqual(session["subscriptions"], ["orders/>"])
        self.assertLess(abs(session["clock"]["offsetMs"] - SKEW_MS), 50, session["clock"])
        self.assertGreaterEqual(session["clock"]["samples"], 5)
        # an order created now is shown live with an ETA on the phone's clock
        created = lb.admin_command(daemon.socket, "order.create", {"id": "PY1"})
        self.assertTrue(created["ok"], created)
        deadline = time.monotonic() + 5
        while not updates_of(client) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(updates_of(client))
        first = updates_of(client)[0]
        self.assertEqual((first["order"], first["seq"], first["status"], first["event"]), ("PY1", 1, "created",
                                                                                           "start"))
        self.assertGreater(first["etaTarget"], int(time.time() * 1000) + SKEW_MS - 1000)
        self.assertEqual(client.sync_state, "live")

    def test_clock_step_is_detected_and_instants_reconverted(self):
        """Step the phone clock +30 s: the daemon's probes detect the step (CLOCKSYNC.md §4) and it re-sends the
        shown order's instants converted for the new clock; the client takes them and logs a reconvert line."""
        daemon = self.start_daemon()
        client = lb.SessionClient(daemon.socket, out=io.StringIO(), err=io.StringIO())
        thread = threading.Thread(target=client.run, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(client.stop)
        time.sleep(0.5)
        self.assertTrue(lb.admin_command(daemon.socket, "order.create", {"id": "ST1"})["ok"])
        deadline = time.monotonic() + 5
        while not client.records and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.0)  # the probe burst settles (a first reconvert may correct the HELLO-based offset)
        before = client.book.topics["orders/ST1"].record["etaTarget"]
        refreshed = client.book.refreshed
        client.step_clock(30_000)
        deadline = time.monotonic() + 25  # one probe interval (at most 16 s) and a confirming sample
        while client.book.topics["orders/ST1"].record["etaTarget"] - before < 25_000 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertGreater(client.book.refreshed, refreshed, "no re-converted EVENT after the step")
        self.assertEqual(client.connections, 1)  # the `reconvert` EVENT did not end the connection
        after = client.book.topics["orders/ST1"].record["etaTarget"]
        self.assertLess(abs(after - before - 30_000), 50, (before, after))
        self.assertEqual([r["type"] for r in client.records if r["type"] != "reconvert"], ["update"])
        self.assertEqual(client.records[-1]["type"], "reconvert")
        self.assertEqual(client.records[-1]["etaTarget"], after)

    def restart_daemon_under_client(self, daemon_args):
        """Attach, see order R1 created, kill -9 the daemon, start it again on the same socket (and data
        directory), wait for the client to attach again. Returns (client, err, socket path)."""
        first = Daemon(*daemon_args)
        self.addCleanup(first.dir.cleanup)
        self.addCleanup(first.log.close)
        err = io.StringIO()
        client = lb.SessionClient(first.socket, name="keep", out=io.StringIO(), err=err)
        thread = threading.Thread(target=client.run, daemon=True)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(client.stop)
        time.sleep(0.5)
        self.assertTrue(lb.admin_command(first.socket, "order.create", {"id": "R1"})["ok"])
        deadline = time.monotonic() + 5
        while not updates_of(client) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(updates_of(client)), 1)
        first.process.kill()  # a crash
        first.process.wait()
        second = subprocess.Popen([DAEMON, "--socket", first.socket] + list(daemon_args), stdout=first.log,
                                  stderr=subprocess.STDOUT)
        self.addCleanup(lambda: (second.send_signal(signal.SIGTERM), second.wait(10)))
        deadline = time.monotonic() + 10
        while (client.connections < 2 or client.sync_state != "live") and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(client.connections, 2, err.getvalue())
        return client, err, first.socket

    def wait_records(self, client, count):
        deadline = time.monotonic() + 5
        while len(updates_of(client)) < count and time.monotonic() < deadline:
            time.sleep(0.05)

    @unittest.skipUnless(DAEMON_HAS_MEMORY, "this livebusd has no --memory (state kept across restarts)")
    def test_daemon_lost_its_state_resume_rejected_attaches_anew(self):
        client, err, socket_path = self.restart_daemon_under_client(["--memory"])
        self.assertIn("resumeRejected", err.getvalue())
        self.assertEqual(client.resumed_count, 0)
        self.assertTrue(lb.admin_command(socket_path, "order.create", {"id": "R2"})["ok"])
        self.wait_records(client, 2)
        self.assertEqual([(r["order"], r["seq"], r["status"]) for r in updates_of(client)],
                         [("R1", 1, "created"), ("R2", 1, "created")])

    @unittest.skipUnless(DAEMON_HAS_MEMORY, "this livebusd keeps no state across restarts")
    def test_daemon_crash_and_restart_on_its_data_resumes(self):
        client, err, socket_path = self.restart_daemon_under_client([])
        self.assertNotIn("resumeRejected", err.getvalue())
        self.assertEqual(client.resumed_count, 1)
        self.assertTrue(lb.admin_command(socket_path, "order.create", {"id": "R2"})["ok"])
        self.wait_records(client, 2)
        self.assertEqual([(r["order"], r["seq"], r["status"]) for r in updates_of(client)],
                         [("R1", 1, "created"), ("R2", 1, "created")])  # R1 not replayed again

    @unittest.skipUnless(os.access(SWIFT_CLI, os.X_OK), "no Swift CLI at %s to mix clients" % SWIFT_CLI)
    def test_mixed_with_the_swift_client(self):
        daemon = self.start_daemon("--scenario", "demo-120s", "--time-scale", "40")
        swift = subprocess.Popen([SWIFT_CLI, "attach", "--socket", daemon.socket, "--json", "--exit-when", "delivered",
                                  "--clock-skew", "+90s", "--name", "swift"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        python = self.attach(daemon, "--clock-skew", "+90s", "--exit-when", "delivered", "--name", "py")
        swift_out, swift_err = swift.communicate(timeout=60)
        python_out, python_err = python.communicate(timeout=60)
        self.assertEqual(swift.returncode, 0, swift_err)
        self.assertEqual(python.returncode, 0, python_err)
        swift_updates = [r for r in parse_lines(swift_out) if r["type"] == "update"]
        python_updates = [r for r in parse_lines(python_out) if r["type"] == "update"]
        self.assertEqual([(r["seq"], r["event"], r["status"]) for r in swift_updates],
                         [(r["seq"], r["event"], r["status"]) for r in python_updates])
        self.assertEqual({r["session"] for r in python_updates}, {"py"})
        for a, b in zip(swift_updates, python_updates):
            if a["uncertaintyMs"] < 100 and b["uncertaintyMs"] < 100:  # both clocks estimated by probes
                # each conversion is within its own uncertainty of the daemon's instant (CLOCKSYNC.md), so two
                # phones differ by at most the sum; 50 ms is the floor (a loaded machine widens the probes' RTT)
                bound = max(50, a["uncertaintyMs"] + b["uncertaintyMs"])
                self.assertLessEqual(abs(a["etaTarget"] - b["etaTarget"]), bound, (a, b))


if __name__ == "__main__":
    unittest.main()
