import LiveBusActivity
import Testing

struct CountdownTests {
    /// Countdown text: m:ss, h:mm:ss past an hour, partial seconds round up, 0:00 at and after zero (never negative).
    /// Source: reference/live-activities.md §1.9 (Text(timerInterval:) stops at its bound; showsHours over 60 min).
    @Test(arguments: [
        (Int64(245_000), "4:05"),
        (244_001, "4:05"),
        (244_000, "4:04"),
        (3_723_000, "1:02:03"),
        (3_600_000, "1:00:00"),
        (3_599_001, "1:00:00"),
        (3_599_000, "59:59"),
        (60_000, "1:00"),
        (59_999, "1:00"),
        (9_000, "0:09"),
        (1, "0:01"),
        (0, "0:00"),
        (-1, "0:00"),
        (-5_000_000, "0:00"),
        (36_000_000, "10:00:00"),
        (Int64.min, "0:00"),
    ])
    func formats(remaining: Int64, expected: String) {
        #expect(formatCountdown(remainingMilliseconds: remaining) == expected)
    }
}
