import LiveBusActivity
import Testing

struct VerdictTests {
    /// A verdict renders as one JSON object with the reason code, Apple's words and the source.
    /// Source: issue text ("Every push gets a verdict ... the reason in Apple's words ... and the rule's source").
    @Test func verdictJSON() {
        #expect(Verdict.applied(source: "s").json == #"{"applied":true,"source":"s"}"#)
        let rejected = Verdict.rejected(.activityEnded, source: ActivitySource.update)
        #expect(
            rejected.json
                == #"{"applied":false,"reason":"activityEnded","appleWords":"The system ignores attempts to update a Live Activity that ended.","message":"the activity ended; nothing is applied after an end or a dismissal","source":"https://developer.apple.com/documentation/activitykit/activity/update(_:)"}"#
        )
        let noWords = Verdict.rejected(.noActivity, source: "x").json
        #expect(!noWords.contains("appleWords"))
    }
}
