import Testing
@testable import LiveBusLayout

@Test func placeholder() {}
