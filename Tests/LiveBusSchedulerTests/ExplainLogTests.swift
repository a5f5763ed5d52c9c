import Foundation
import LiveBusClock
import LiveBusScheduler
import Testing

struct ExplainLogTests {
    /// Every decision is explainable: the log says what happened to each update, with a reason code, the
    /// channel, the numbers behind it, words and the rule's source (issue: "a bounded explain log with reason
    /// codes and the source of the rule").
    @Test func explainLogRecordsEachDecisionInOrder() {
        var s = makeScheduler(config: SchedulerConfig(priority10BudgetPerHour: 1, refreshJitterMilliseconds: 0))
        _ = s.offer(update(1), at: at(0))
        _ = s.offer(update(2), at: at(10))
        _ = s.offer(update(3, priority: 5), at: at(20))
        _ = s.requestBackgroundRefresh(earliestBegin: at(60), at: at(30))
        _ = s.advance(to: at(60))
        _ = s.advance(to: at(90))
        let log = s.explain(last: 100)
        struct Row: Equatable {
            var outcome: DecisionOutcome
            var reason: DecisionReason
            var sequence: UInt64?
            var channel: Channel?
            var seconds: Int64
        }
        let rows = log.map {
            Row(
                outcome: $0.outcome,
                reason: $0.reason,
                sequence: $0.sequence,
                channel: $0.channel,
                seconds: ($0.atMilliseconds - start.millisecondsSinceEpoch) / 1000
            )
        }
        #expect(
            rows == [
                Row(outcome: .delivered, reason: .priority10Immediate, sequence: 1, channel: .activityPush, seconds: 0),
                Row(outcome: .delayed, reason: .priority10Throttled, sequence: 2, channel: nil, seconds: 10),
                Row(outcome: .coalesced, reason: .coalesced, sequence: 2, channel: nil, seconds: 20),
                Row(outcome: .delayed, reason: .priority10Throttled, sequence: 3, channel: nil, seconds: 20),
                Row(outcome: .scheduled, reason: .refreshScheduled, sequence: nil, channel: nil, seconds: 30),
                Row(outcome: .opened, reason: .refreshWindowOpened, sequence: nil, channel: nil, seconds: 60),
                Row(outcome: .delivered, reason: .refreshWindow, sequence: 3, channel: .appConnection, seconds: 60),
                Row(outcome: .closed, reason: .appWindowClosed, sequence: nil, channel: nil, seconds: 90),
            ]
        )
        #expect(log[0].detail == "budget 1/1 used in the rolling hour")
        #expect(log[1].detail == "budget 1/1 used; retry at server@\(at(3600).millisecondsSinceEpoch)ms")
        #expect(log[2].detail == "superseded by seq 3")
        #expect(log.allSatisfy { $0.words == $0.reason.words && $0.source == $0.reason.source })
        #expect(log.filter { $0.topic != nil }.allSatisfy { $0.topic == "orders/A1001" })
        #expect(s.explain(last: 2).map(\.reason) == [.refreshWindow, .appWindowClosed])
        #expect(s.explain(last: 0).isEmpty)
    }

    /// The explain log is bounded: it keeps the newest `explainLogCapacity` decisions.
    @Test func explainLogIsBounded() {
        var s = makeScheduler(config: SchedulerConfig(explainLogCapacity: 4), state: .foreground)
        for seq in UInt64(1)...10 { _ = s.offer(update(seq), at: at(Int64(seq))) }
        #expect(s.explain(last: 100).compactMap(\.sequence) == [7, 8, 9, 10])
    }

    /// Every reason code has words and a source (Apple URL, WWDC session, or marked as ours).
    @Test(arguments: DecisionReason.allCases)
    func everyReasonHasWordsAndSource(reason: DecisionReason) {
        #expect(reason.words.hasSuffix("."))
        #expect(reason.source.contains("https://") || reason.source.contains("ours") || reason.source.contains("WWDC"))
    }

    /// `status` is Codable for `livebus status --json` and reports app state, next window, budget left,
    /// queued and coalesced counts (issue: "Every decision is explainable: per session …").
    @Test func statusRoundTripsThroughJSON() throws {
        var s = makeScheduler()
        _ = s.offer(update(1), at: at(0))
        _ = s.offer(update(2, priority: 5), at: at(1))
        _ = s.offer(update(3, priority: 5), at: at(2))
        _ = s.requestBackgroundRefresh(earliestBegin: at(600), at: at(3))
        let status = s.status(at: at(3))
        #expect(status.appState == .background)
        #expect(status.nextRefreshWindowAtMilliseconds == at(600).millisecondsSinceEpoch)
        #expect(status.priority10BudgetLeft == 11)
        #expect(status.queued.map(\.sequence) == [3])
        #expect(status.coalescedCount == 1)
        #expect(status.lastDelivered == [TopicSequence(topic: "orders/A1001", sequence: 1)])
        #expect(status.nextDeadlineMilliseconds == at(600).millisecondsSinceEpoch)
        #expect(status.recentDecisions.count == 5)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(status)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"priority10BudgetLeft\":11"))
        #expect(text.contains("\"appState\":\"background\""))
        #expect(try JSONDecoder().decode(SchedulerStatus.self, from: data) == status)
    }

    /// The same seed and inputs give the same deliveries and the same log (issue: "deterministic for a given
    /// seed").
    @Test func sameSeedSameDecisions() {
        func run(seed: UInt64) -> ([Delivery], [Decision]) {
            var s = makeScheduler(config: .default, seed: seed)
            var out: [Delivery] = []
            for n in Int64(0)..<40 {
                out += s.offer(update(UInt64(n + 1), priority: n.isMultiple(of: 3) ? 10 : 5), at: at(n * 120))
                if n.isMultiple(of: 10) {
                    out += s.requestBackgroundRefresh(earliestBegin: at(n * 120 + 60), at: at(n * 120))
                }
            }
            out += s.advance(to: at(86_400))
            return (out, s.explain(last: 64))
        }
        let (first, firstLog) = run(seed: 7)
        let (second, secondLog) = run(seed: 7)
        #expect(first == second)
        #expect(firstLog == secondLog)
        #expect(!first.isEmpty)
        #expect(first.last?.update.sequence == 40)
    }

    /// The scheduler's clock never goes back: an instant earlier than one already seen counts as that one.
    @Test func clockNeverGoesBack() {
        var s = makeScheduler(state: .foreground)
        _ = s.advance(to: at(100))
        #expect(s.offer(update(1), at: at(50)).sent == [Sent(1, .appConnection, .foregroundStream, at: 100)])
        #expect(s.clock == at(100))
    }
}
