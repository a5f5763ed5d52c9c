"""Sequence rules (PROTOCOL.md §5.2), Apple's Live Activity content rules, stale timer, clock and CLI words."""

import os
import socket
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import livebus_client as lb  # noqa: E402

TOPIC = "orders/A1001"


class FakeNow:
    def __init__(self, now=1_000_000):
        self.now = now

    def __call__(self):
        return self.now


def event(seq, status="cooking", kind="update", timestamp=None, eta=2_000_000, stale=None, offset=90_000):
    timestamp = timestamp if timestamp is not None else 500_000 + seq * 1000
    body = {"event": kind, "timestamp": timestamp, "priority": 10, "relevanceScore": 50,
            "contentState": {"status": status, "etaTarget": eta, "progress": 0.5, "lastConfirmed": timestamp,
                             "summary": {"en": status, "ko": status}},
            "client": {"timestamp": timestamp + offset, "etaTarget": eta + offset, "lastConfirmed": timestamp + offset,
                       "staleDate": stale + offset if stale is not None else None, "dismissalDate": None,
                       "uncertaintyMs": 3}}
    if stale is not None:
        body["staleDate"] = stale
    return body


class SequenceRuleTests(unittest.TestCase):
    def setUp(self):
        self.now = FakeNow()
        self.book = lb.OrderBook("pro", self.now)

    def feed(self, seq, flags=0, **kwargs):
        return self.book.on_event(TOPIC, seq, flags, event(seq, **kwargs))

    def test_in_order_events_apply(self):
        for seq in (1, 2, 3):
            records, resends = self.feed(seq)
            self.assertEqual([r["seq"] for r in records], [seq])
            self.assertEqual(resends, [])
        self.assertEqual(self.book.last_sequences(), {TOPIC: 3})

    def test_duplicates_are_ignored(self):
        self.feed(1)
        self.feed(2)
        self.assertEqual(self.feed(2), ([], []))
        self.assertEqual(self.feed(1), ([], []))

    def test_gap_holds_and_asks_for_resend_once(self):
        self.feed(1)
        records, resends = self.feed(3)
        self.assertEqual(records, [])
        self.assertEqual(resends, [(TOPIC, 2)])
        records, resends = self.feed(4)
        self.assertEqual((records, resends), ([], []))  # same gap: no second RESEND
        self.assertTrue(self.book.pending())
        records, resends = self.feed(2, flags=lb.FLAG_REPLAY)
        self.assertEqual([r["seq"] for r in records], [2, 3, 4])
        self.assertEqual(records[0]["delivery"], "replay")
        self.assertIsNone(records[1]["delivery"])
        self.assertFalse(self.book.pending())
        # the replayed copies of 3 and 4 that follow the RESEND are duplicates
        self.assertEqual(self.feed(3, flags=lb.FLAG_REPLAY), ([], []))

    def test_second_gap_after_partial_fill_asks_again(self):
        self.feed(1)
        self.feed(3)
        self.feed(6)
        records, resends = self.feed(2)
        self.assertEqual([r["seq"] for r in records], [2, 3])
        self.assertEqual(resends, [(TOPIC, 4)])

    def test_snapshot_jumps_and_supersedes_held(self):
        self.feed(1)
        self.feed(5)
        records, resends = self.feed(4, flags=lb.FLAG_SNAPSHOT, status="pickedUp")
        self.assertEqual([(r["seq"], r["delivery"]) for r in records], [(4, "snapshot"), (5, None)])
        self.assertEqual(resends, [])
        self.assertFalse(self.book.pending())
        self.assertEqual(self.book.last_sequences(), {TOPIC: 5})

    def test_first_event_may_be_a_snapshot(self):
        records, _ = self.feed(9, flags=lb.FLAG_SNAPSHOT | lb.FLAG_REPLAY)
        self.assertEqual(records[0]["seq"], 9)
        self.assertEqual(records[0]["delivery"], "snapshot")

    def test_old_snapshot_is_a_duplicate(self):
        self.feed(1)
        self.feed(2)
        self.assertEqual(self.feed(2, flags=lb.FLAG_SNAPSHOT), ([], []))

    def test_uptodate_ahead_asks_for_resend(self):
        self.feed(1)
        self.assertEqual(self.book.on_uptodate(TOPIC, 3), [(TOPIC, 2)])
        self.assertEqual(self.book.on_uptodate(TOPIC, 1), [])

    def test_uptodate_ahead_asks_again_while_events_are_held(self):
        """The RESEND that answered a gap was lost too (a drop toxic): the next UPTODATE asks again (e2e-reset-storm)."""
        self.feed(1)
        self.assertEqual(self.feed(3)[1], [(TOPIC, 2)])
        self.assertEqual(self.feed(4)[1], [])  # the gap is already asked for
        self.assertEqual(self.book.on_uptodate(TOPIC, 4), [(TOPIC, 2)])
        self.assertEqual(self.book.on_uptodate(TOPIC, 4), [(TOPIC, 2)])
        records, _ = self.feed(2)
        self.assertEqual([r["seq"] for r in records], [2, 3, 4])
        self.assertFalse(self.book.pending())

    def test_uptodate_behind_us_restarts_the_topic(self):
        """A daemon that lost its state numbers from 1 again: its UPTODATE is below our last sequence."""
        for seq in (1, 2, 3):
            self.feed(seq)
        self.assertEqual(self.feed(1), ([], []))  # looks like a duplicate until the UPTODATE says otherwise
        self.assertEqual(self.book.on_uptodate(TOPIC, 1), [(TOPIC, 1)])
        records, resends = self.feed(1, flags=lb.FLAG_REPLAY, kind="start", status="created")
        self.assertEqual([r["seq"] for r in records], [1])
        self.assertFalse(self.book.pending())

    def test_topics_are_independent(self):
        self.book.on_event("orders/B", 1, 0, event(1))
        records, resends = self.feed(1)
        self.assertEqual(len(records), 1)
        self.assertEqual(self.book.last_sequences(), {TOPIC: 1, "orders/B": 1})


class ContentRuleTests(unittest.TestCase):
    def setUp(self):
        self.now = FakeNow()
        self.book = lb.OrderBook("pro", self.now)

    def feed(self, seq, **kwargs):
        records, _ = self.book.on_event(TOPIC, seq, 0, event(seq, **kwargs))
        return records[0]

    def test_older_timestamp_is_not_applied(self):
        self.feed(1, timestamp=10_000, status="cooking")
        record = self.feed(2, timestamp=9_000, status="created")
        self.assertFalse(record["applied"])
        self.assertEqual(record["reason"], "olderTimestamp")
        record = self.feed(3, timestamp=10_000, status="awaitingPickup")  # equal is not older
        self.assertTrue(record["applied"])

    def test_end_applies_even_when_older_and_nothing_after(self):
        self.feed(1, timestamp=10_000)
        record = self.feed(2, timestamp=5_000, kind="end", status="delivered")
        self.assertTrue(record["applied"])
        self.assertIsNone(record["reason"])
        record = self.feed(3, timestamp=20_000)
        self.assertFalse(record["applied"])
        self.assertEqual(record["reason"], "afterEnd")
        self.assertTrue(self.book.all_ended())

    def test_record_fields(self):
        self.now.now = 2_000_000 + 90_000 - 1500
        record = self.feed(1, status="created", kind="start", stale=1_000_000)
        self.assertEqual(set(record), {"type", "session", "topic", "order", "seq", "event", "status", "etaTarget",
                                       "remainingMs", "stale", "applied", "reason", "clientTime", "uncertaintyMs",
                                       "delivery"})
        self.assertEqual(record["type"], "update")
        self.assertEqual(record["session"], "pro")
        self.assertEqual(record["order"], "A1001")
        self.assertEqual(record["etaTarget"], 2_090_000)
        self.assertEqual(record["remainingMs"], 1500)
        self.assertTrue(record["stale"])  # client now ≥ client.staleDate (1_090_000)
        self.assertEqual(record["clientTime"], self.now.now)
        self.assertEqual(record["uncertaintyMs"], 3)
        self.now.now = 3_000_000
        self.assertEqual(self.feed(2)["remainingMs"], 0)

    def test_stale_timer_once_per_update(self):
        self.now.now = 1_000_000
        self.feed(1, stale=1_000_000)  # client stale date 1_090_000
        self.assertEqual(self.book.next_stale_deadline(), 1_090_000)
        self.now.now = 1_089_999
        self.assertEqual(self.book.due_stale(), [])
        self.now.now = 1_090_000
        records = self.book.due_stale()
        self.assertEqual([(r["type"], r["stale"], r["seq"]) for r in records], [("stale", True, 1)])
        self.assertEqual(self.book.due_stale(), [])
        self.assertIsNone(self.book.next_stale_deadline())
        self.feed(2, stale=1_100_000)  # a fresher update clears it
        self.assertEqual(self.book.next_stale_deadline(), 1_190_000)

    def test_reconvert_of_the_last_sequence_refreshes_client_instants(self):
        self.feed(1, eta=2_000_000, offset=90_000, stale=1_500_000)
        self.feed(2, eta=2_000_000, offset=90_000, stale=1_500_000)
        body = event(2, eta=2_000_000, offset=120_000, stale=1_500_000)  # the phone clock stepped +30 s
        self.now.now = 1_200_000
        records, resends = self.book.on_event(TOPIC, 2, lb.FLAG_RECONVERT, body)
        self.assertEqual(resends, [])
        self.assertEqual([(r["type"], r["seq"], r["delivery"], r["etaTarget"], r["remainingMs"], r["clientTime"])
                          for r in records], [("reconvert", 2, "reconvert", 2_120_000, 920_000, 1_200_000)])
        state = self.book.topics[TOPIC]
        self.assertEqual(state.record["etaTarget"], 2_120_000)
        self.assertEqual(state.stale_date, 1_620_000)
        self.assertEqual(self.book.refreshed, 1)
        # an older sequence's reconvert, or a plain duplicate, changes nothing
        self.book.on_event(TOPIC, 1, lb.FLAG_RECONVERT, event(1, offset=150_000))
        self.book.on_event(TOPIC, 2, 0, event(2, offset=150_000))
        self.assertEqual(state.record["etaTarget"], 2_120_000)
        self.assertEqual(self.book.refreshed, 1)

    def test_reconvert_of_an_unseen_sequence_is_an_ordinary_event(self):
        self.feed(1)
        records, _ = self.book.on_event(TOPIC, 2, lb.FLAG_RECONVERT, event(2))
        self.assertEqual([r["seq"] for r in records], [2])


class WordsAndClockTests(unittest.TestCase):
    def test_durations(self):
        self.assertEqual(lb.parse_duration_ms("90s"), 90_000)
        self.assertEqual(lb.parse_duration_ms("+90s"), 90_000)
        self.assertEqual(lb.parse_duration_ms("-1h"), -3_600_000)
        self.assertEqual(lb.parse_duration_ms("1m30s"), 90_000)
        self.assertEqual(lb.parse_duration_ms("250ms"), 250)
        self.assertEqual(lb.parse_duration_ms("0"), 0)
        with self.assertRaises(ValueError):
            lb.parse_duration_ms("soon")

    def test_clock_drift_is_ppm_bare_or_with_its_unit(self):
        # As `livebus attach --clock-drift` (review finding: `50ppm` was refused there).
        import argparse
        self.assertEqual(lb._ppm_arg("50"), 50.0)
        self.assertEqual(lb._ppm_arg("50ppm"), 50.0)
        self.assertEqual(lb._ppm_arg("-20ppm"), -20.0)
        self.assertEqual(lb._ppm_arg("+3.5ppm"), 3.5)
        for bad in ("50ms", "ppm", "2e6", "nanppm", "fast"):
            with self.assertRaises(argparse.ArgumentTypeError):
                lb._ppm_arg(bad)

    def test_bare_numbers_and_fractions_of_a_millisecond_are_refused(self):
        # One rule with the Swift CLI (README "Durations"): `--clock-skew 500` was 500 ms here and 500 s there.
        for text, hint in (("500", "did you mean 500ms or 500s?"), ("-90", "did you mean -90ms or -90s?"),
                           ("2.5", "did you mean 2.5ms or 2.5s?")):
            with self.assertRaises(ValueError) as caught:
                lb.parse_duration_ms(text)
            self.assertIn(hint, str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            lb.parse_duration_ms("0.5ms")
        self.assertIn("whole number of milliseconds", str(caught.exception))
        self.assertEqual(lb.parse_duration_ms("1.5s"), 1500)

    def test_cli_refuses_a_bare_clock_skew(self):
        with self.assertRaises(SystemExit) as caught:
            lb.build_parser().parse_args(["attach", "--clock-skew", "500"])
        self.assertEqual(caught.exception.code, 2)

    def test_posture_script(self):
        self.assertEqual(lb.parse_posture_script("4s:flat,2s:half-opened,6s:background,7s:landscape,8s:closed"), [
            (2000, "foldState", "half-opened"), (4000, "foldState", "flat"), (6000, "appState", "background"),
            (7000, "orientation", "landscape"), (8000, "foldState", "folded")])
        with self.assertRaises(ValueError):
            lb.parse_posture_script("2s:sideways")
        with self.assertRaises(ValueError):
            lb.parse_posture_script("8:closed")

    def test_sim_clock_skew_drift_step(self):
        real = [1000.0]
        clock = lb.SimClock(skew_ms=90_000, drift_ppm=200, source=lambda: real[0])
        self.assertEqual(clock.now_ms(), 1_000_000 + 90_000)
        real[0] += 120.0  # 120 s later, 200 ppm fast: +24 ms
        self.assertEqual(clock.now_ms(), 1_120_000 + 90_000 + 24)
        clock.step(30_000)
        self.assertEqual(clock.now_ms(), 1_120_000 + 120_000 + 24)

    def test_negative_skew_and_drift_parse(self):
        args = lb.build_parser().parse_args(lb._join_signed_values(
            ["attach", "--clock-skew", "-90s", "--clock-drift", "-200", "--duration", "2s"]))
        self.assertEqual((args.clock_skew, args.clock_drift, args.duration), (-90_000, -200.0, 2000))

    def test_cli_usage_errors_exit_2(self):
        for argv in (["attach", "--bogus"], ["attach", "--posture", "sideways"], ["attach", "--duration", "x"], [],
                     ["attach", "--name", "all"], ["attach", "--name", "current"], ["attach", "--name", "s12"]):
            with self.subTest(argv=argv):
                with open(os.devnull, "w") as devnull:
                    saved = sys.stderr
                    sys.stderr = devnull
                    try:
                        try:
                            code = lb.main(argv)
                        except SystemExit as exit_:
                            code = exit_.code
                    finally:
                        sys.stderr = saved
                self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()


class OtherUserTests(unittest.TestCase):
    """Issue 14: the default socket is in a private directory, and a daemon of another user is refused."""

    def test_default_socket_is_in_a_private_directory(self):
        saved = dict(os.environ)
        try:
            os.environ.pop("LIVEBUS_SOCKET", None)
            os.environ["XDG_RUNTIME_DIR"] = "/tmp"  # not private (1777): not used
            self.assertEqual(lb._default_socket(), "/tmp/livebus-%d/livebus.sock" % os.getuid())
            private = tempfile.mkdtemp()  # 0700, ours
            os.environ["XDG_RUNTIME_DIR"] = private
            self.assertEqual(lb._default_socket(), private + "/livebus.sock")
            os.rmdir(private)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_peer_of_this_user_is_accepted(self):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.assertIsNone(lb._peer_problem(a, "pair"))
        finally:
            a.close()
            b.close()
