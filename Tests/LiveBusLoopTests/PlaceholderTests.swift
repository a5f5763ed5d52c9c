import Testing
@testable import LiveBusLoop

@Test func placeholder() {}
