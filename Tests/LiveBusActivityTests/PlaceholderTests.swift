import Testing
@testable import LiveBusActivity

@Test func placeholder() {}
