/// The version of the end-to-end scenario format this build reads (`Protocol/E2E.md`).
public let e2eScenarioFormatVersion = 1
