import Foundation
import Testing

@testable import LiveBusLayout

struct DeviceCatalogTests {
    /// `devices.json` is read and decoded once per process, however often a catalog is asked for: a client lays out
    /// per update and a daemon checks a posture per HELLO (each decode was ~150 M instructions, release build).
    @Test func theBundledFileIsReadOncePerProcess() throws {
        for _ in 0..<5 { _ = try DeviceCatalog.bundled() }
        #expect(DeviceCatalog.bundledFileReads.load(ordering: .relaxed) == 1)
        #expect(try DeviceCatalog.bundled().devices.count == testCatalog.devices.count)
    }

    /// The catalog holds the devices the issue names, with their display names. Source: LiveBus issue "Posture".
    @Test func catalogHasTheRequiredDevices() {
        let names: [String: String] = Dictionary(uniqueKeysWithValues: testCatalog.devices.map { ($0.id, $0.name) })
        // Each id with its display name (one table: 23 #expect expansions took 0.6 s to type-check).
        let want: [(id: String, name: String)] = [
            ("iphone-se-3", "iPhone SE (3rd gen)"),
            ("iphone-16", "iPhone 16"),
            ("iphone-16-pro", "iPhone 16 Pro"),
            ("iphone-16-pro-max", "iPhone 16 Pro Max"),
            ("galaxy-z-fold6", "Galaxy Z Fold6"),
            ("galaxy-z-flip6", "Galaxy Z Flip6"),
            ("pixel-9-pro-fold", "Pixel 9 Pro Fold"),
            ("surface-duo-2", "Surface Duo 2"),
            ("iphone-duo", "iPhone Duo"),
            // Issue 18: the first-generation Surface Duo (540×720 dp screens, 34 dp hinge).
            ("surface-duo", "Surface Duo"),
            ("iphone-13-mini", "iPhone 13 mini"),
            ("iphone-14", "iPhone 14"),
            ("ipad-pro-11", "iPad Pro 11-inch"),
            ("ipad-pro-12-9", "iPad Pro 12.9-inch"),
            ("galaxy-z-fold5", "Galaxy Z Fold5"),
            // Issue 18 ("Catalog"): the Plus class, non-foldable Android phones and the Asus Zenbook Fold.
            ("iphone-16-plus", "iPhone 16 Plus"),
            ("pixel-7", "Pixel 7"),
            ("galaxy-s20-ultra", "Galaxy S20 Ultra"),
            ("galaxy-s8-plus", "Galaxy S8+"),
            ("galaxy-a51", "Galaxy A51/71"),
            ("asus-zenbook-fold", "Asus Zenbook Fold"),
        ]
        for (id, name) in want { #expect(names[id] == name, "\(id)") }
        for id in ["ipad-mini", "ipad-air-11"] { #expect(names[id] != nil, "\(id)") }
        #expect(testCatalog.devices.count == 23)
    }

    /// Every screen cites a source for each figure it has, and every mark is one of posture-and-devices.md's.
    /// Source: LiveBus issue "Posture" ("the source of each number").
    @Test func everyFigureHasASource() throws {
        for device in testCatalog.devices {
            for screen in device.screens {
                var needed = ["portrait", "scale", "safeArea"]
                if screen.pixels != nil { needed.append("pixels") }
                if screen.hinge != nil { needed.append("hinge") }
                if screen.dynamicIsland != nil { needed.append("dynamicIsland") }
                if screen.liveActivity != nil { needed.append("liveActivity") }
                if screen.windowWidths != nil { needed.append("windowWidths") }
                if screen.sizeClasses != nil { needed.append("sizeClasses") }
                for field in needed {
                    let source = try #require(screen.sources[field], "\(device.id) \(screen.name) \(field)")
                    #expect(!source.ref.isEmpty)
                }
            }
        }
    }

    /// Estimates from posture-and-devices.md stay marked as estimates in the catalog (iPhone 16 safe area: "same
    /// panel as 14 Pro"; Android safe areas; iPhone 16 Pro Live Activity sizes).
    @Test func estimatesKeepTheirMark() throws {
        let main16 = try #require(testCatalog.device("iphone-16").screen(for: .flat))
        #expect(main16.sources["safeArea"]?.mark == .estimate)
        let pro = try #require(testCatalog.device("iphone-16-pro").screen(for: .flat))
        #expect(pro.sources["liveActivity"]?.mark == .estimate)
        #expect(pro.sources["safeArea"]?.mark == .thirdParty)
        let fold = try #require(testCatalog.device("galaxy-z-fold6").screen(for: .flat))
        #expect(fold.sources["safeArea"]?.mark == .estimate)
        let duo = try #require(testCatalog.device("iphone-duo").screen(for: .halfOpened))
        #expect(duo.sources["hinge"]?.mark == .measured3rd)
        #expect(main16.sources["portrait"]?.mark == .official)
    }

    /// Android sizes are dp converted from pixels and labelled (px ÷ density). Source: posture-and-devices.md §2
    /// rows 18, 20, 21, 23.
    @Test func androidScreensAreConvertedToDp() throws {
        let fold6 = try testCatalog.device("galaxy-z-fold6")
        #expect(fold6.unit == "dp")
        #expect(fold6.screen(for: .folded)?.portrait == Size(width: 368.76, height: 905.14))
        #expect(fold6.screen(for: .flat)?.portrait == Size(width: 707.05, height: 822.86))
        let duo2 = try testCatalog.device("surface-duo-2")
        #expect(duo2.screen(for: .folded)?.portrait == Size(width: 537.6, height: 756.8))
        let hinge = try #require(duo2.screen(for: .flat)?.hinge)
        #expect(hinge.flatWidth == 26.4)
        #expect(hinge.centerInPortrait == 550.8)
        #expect(
            try testCatalog.device("pixel-9-pro-fold").screen(for: .flat)?.portrait
                == Size(width: 851.69, height: 882.87)
        )
        #expect(
            try testCatalog.device("galaxy-z-flip6").screen(for: .flat)?.portrait
                == Size(width: 411.43, height: 1005.71)
        )
    }

    /// iPhone Duo: outer when folded, inner flat and half-opened, fold at 475.5 with a 40 pt division when
    /// half-opened. Source: posture-and-devices.md §1.7.
    @Test func iPhoneDuoScreens() throws {
        let duo = try testCatalog.device("iphone-duo")
        #expect(duo.supportedFoldStates == [.flat, .halfOpened, .folded])
        #expect(duo.screen(for: .folded)?.name == "outer")
        #expect(duo.screen(for: .folded)?.portrait == Size(width: 466, height: 678))
        #expect(duo.screen(for: .flat)?.size(in: .landscape) == Size(width: 951, height: 669))
        let hinge = try #require(duo.screen(for: .halfOpened)?.hinge)
        #expect(hinge.centerInPortrait == 475.5)
        #expect(hinge.flatWidth == 0)
        #expect(hinge.halfOpenedWidth == 40)
    }

    /// Unknown ids are rejected with the list of valid ids.
    @Test func unknownDeviceListsValidIDs() {
        #expect {
            _ = try testCatalog.device("iphone-17")
        } throws: { error in
            guard let e = error as? LayoutError else { return false }
            return e.code == .unknownDevice && e.message.contains("'iphone-17'")
                && e.message.contains("valid ids: iphone-se-3, iphone-13-mini, iphone-14, iphone-16, ")
                && e.message.hasSuffix("iphone-duo")
        }
    }

    /// A catalog breaking a documented rule is rejected with what to fix.
    @Test func invalidCatalogIsRejected() {
        let json = """
            {"version": 2, "defaults": {"reservedRegionMargin": 12, "regularWidthFrom": 600, "regularHeightFrom": 480,
             "iPadRegularWidthFrom": 678, "minimumWindowEdge": 320, "sources": {}}, "devices": []}
            """
        #expect(throws: LayoutError.self) { try DeviceCatalog.decode(Data(json.utf8)) }
        do {
            _ = try DeviceCatalog.decode(Data(json.utf8))
        } catch {
            #expect(error.code == .catalogInvalid)
            #expect(error.message.contains("version 2"))
        }
        do {
            _ = try DeviceCatalog.decode(Data("{".utf8))
        } catch {
            #expect(error.code == .catalogUnreadable)
        }
    }
}
