/// Scenarios that ship inside the library, in the timeline file format (`Protocol/SCENARIOS.md`).
///
/// `demo120s` is byte for byte `Protocol/scenarios/timeline-demo-120s.json` (a test checks it).
enum BuiltInScenarios {
    /// The Delivery Lab 120-second demo (field report 001).
    static let demo120s = """
        {
          "version": 1,
          "name": "demo-120s",
          "description": "The Delivery Lab 120-second demo: one order A1001 through every phase; the ETA is revised later (traffic) and earlier (a shortcut); the backend stalls for 26 s while delivering, the 15 s stale date passes, then it recovers.",
          "settings": {
            "positionInterval": "10s",
            "staleAfter": {
              "created": "20s",
              "cooking": "40s",
              "awaitingPickup": "20s",
              "pickedUp": "15s",
              "delivering": "15s"
            },
            "dismissAfter": { "delivered": "30s", "canceled": "30s" }
          },
          "events": [
            {
              "at": "0s", "type": "createOrder", "order": "A1001", "customer": "C0001",
              "store": { "latitude": 37.5636, "longitude": 126.9827 },
              "destination": { "latitude": 37.5704, "longitude": 126.9921 },
              "waypoints": [ { "latitude": 37.5662, "longitude": 126.9851 } ],
              "etaAt": "120s",
              "note": "countdown starts at 2:00"
            },
            { "at": "8s", "type": "setStatus", "order": "A1001", "status": "cooking",
              "note": "the field report's captures 1:44 and 1:28 (and 조리 중 1:27) fall in this phase" },
            { "at": "36s", "type": "setStatus", "order": "A1001", "status": "awaitingPickup" },
            { "at": "46s", "type": "setStatus", "order": "A1001", "status": "pickedUp" },
            { "at": "52s", "type": "setStatus", "order": "A1001", "status": "delivering",
              "note": "the rider moves along the route; positions every 10 s (62 s, 72 s, …)" },
            { "at": "64s", "type": "reviseEta", "order": "A1001", "etaAt": "132s", "reason": "traffic: 12 s later" },
            { "at": "74s", "type": "stall", "order": "A1001", "duration": "26s",
              "note": "no news from 74 s to 100 s; the last update (72 s) goes stale at 87 s" },
            { "at": "100s", "type": "reviseEta", "order": "A1001", "etaAt": "120s", "reason": "recovered; shortcut: 12 s earlier" },
            { "at": "120s", "type": "setStatus", "order": "A1001", "status": "delivered" }
          ]
        }
        """
}
