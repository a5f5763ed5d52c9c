import LiveBusWire

// The slow-consumer and coalescing test runs on the embedded daemon (LiveBusDaemonTests, EmbeddedSessionTests,
// slowConsumerIsCoalescedThenCutWhileAnotherPhoneGetsEverything): no socket, no sleep, virtual time. The real-process
// slow consumer is the e2e scenario Protocol/scenarios/e2e-slow-consumer.json.

/// A sample event body for publishing in tests.
enum GoldenVectorsForTests {
    static let event = EventBody(
        event: "update",
        timestamp: 1_767_225_600_000,
        contentState: ContentStateBody(
            status: "cooking",
            summary: SummaryBody(ko: "조리 중", en: "Cooking"),
            etaTarget: 1_767_226_800_000,
            progress: 0.25,
            riderPosition: nil,
            lastConfirmed: 1_767_225_600_000
        ),
        staleDate: nil,
        relevanceScore: 50,
        dismissalDate: nil,
        priority: 10
    )
}
