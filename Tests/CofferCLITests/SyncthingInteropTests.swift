import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One Syncthing daemon on loopback: its own --home in a temp folder,
/// GUI/REST and sync listening on 127.0.0.1 at free ports; discovery,
/// relays, NAT, upgrades, crash and usage reporting off. Always stopped by
/// ``stop()`` (tests call it in a `defer`).
final class SyncthingDaemon: @unchecked Sendable {
    let home: String
    let folder: String
    let deviceID: String
    let listenPort: Int
    let guiPort: Int
    let apiKey = "coffer-test-" + UUID().uuidString.prefix(8)
    private var process: Process?

    /// Generates keys (`syncthing generate`) and picks ports; the config
    /// is written by ``configure(peer:)`` once the peer is known.
    init(root: String, name: String) throws {
        home = root + "/st-" + name
        folder = root + "/sync-" + name
        try FileManager.default.createDirectory(atPath: folder + "/.stfolder", withIntermediateDirectories: true)
        let gen = Spawn.run(
            "syncthing", ["generate", "--home=\(home)", "--no-default-folder", "--skip-port-probing"], stdin: nil, fd3: nil, environment: Self.env,
            workDir: root)
        guard gen.status == 0, let line = (gen.stdout + gen.stderr).split(separator: "\n").first(where: { $0.contains("Device ID:") }),
            let id = line.components(separatedBy: "Device ID:").last?.trimmingCharacters(in: .whitespaces)
        else { throw SyncthingError.setup("syncthing generate failed: \(gen)") }
        deviceID = id
        listenPort = Self.freePort()
        guiPort = Self.freePort()
    }

    enum SyncthingError: Error { case setup(String) }

    static let env: [String: String] = [
        "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
        "STNODEFAULTFOLDER": "1", "STNOUPGRADE": "1", "STNORESTART": "1", "HOME": NSTemporaryDirectory(),
    ]

    /// A TCP port free on 127.0.0.1 right now.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Writes config.xml: this device and `peer`, one folder shared both
    /// ways, rescanned every 2 s and watched (1 s delay).
    func configure(peer: SyncthingDaemon) throws {
        let xml = """
            <configuration version="36">
                <folder id="coffer" label="coffer" path="\(folder)" type="sendreceive" rescanIntervalS="2" fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
                    <device id="\(deviceID)" introducedBy=""></device>
                    <device id="\(peer.deviceID)" introducedBy=""></device>
                    <minDiskFree unit="%">0</minDiskFree>
                    <markerName>.stfolder</markerName>
                    <maxConflicts>10</maxConflicts>
                    <copiers>1</copiers>
                    <hashers>1</hashers>
                </folder>
                <device id="\(deviceID)" name="self" compression="metadata" introducer="false">
                    <address>dynamic</address>
                </device>
                <device id="\(peer.deviceID)" name="peer" compression="metadata" introducer="false">
                    <address>tcp://127.0.0.1:\(peer.listenPort)</address>
                </device>
                <gui enabled="true" tls="false" debugging="false">
                    <address>127.0.0.1:\(guiPort)</address>
                    <apikey>\(apiKey)</apikey>
                </gui>
                <options>
                    <listenAddress>tcp://127.0.0.1:\(listenPort)</listenAddress>
                    <globalAnnounceEnabled>false</globalAnnounceEnabled>
                    <localAnnounceEnabled>false</localAnnounceEnabled>
                    <relaysEnabled>false</relaysEnabled>
                    <natEnabled>false</natEnabled>
                    <startBrowser>false</startBrowser>
                    <urAccepted>-1</urAccepted>
                    <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                    <crashReportingEnabled>false</crashReportingEnabled>
                    <reconnectionIntervalS>1</reconnectionIntervalS>
                    <minHomeDiskFree unit="%">0</minHomeDiskFree>
                    <setLowPriority>false</setLowPriority>
                </options>
            </configuration>
            """
        try xml.write(toFile: home + "/config.xml", atomically: true, encoding: .utf8)
    }

    func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/syncthing")
        p.arguments = ["serve", "--home=\(home)", "--no-browser", "--no-restart", "--no-upgrade", "--logfile=\(home)/syncthing.log"]
        p.environment = Self.env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
    }

    func stop() {
        guard let p = process, p.isRunning else { return }
        p.terminate()
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(50_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        process = nil
    }

    deinit { stop() }

    /// Whether the REST API says the peer is connected.
    func isConnected(to peer: SyncthingDaemon) -> Bool {
        let r = Spawn.run(
            "curl", ["-s", "-m", "2", "-H", "X-API-Key: \(apiKey)", "http://127.0.0.1:\(guiPort)/rest/system/connections"],
            stdin: nil, fd3: nil, environment: Self.env, workDir: "/")
        guard r.status == 0, let data = r.stdout.data(using: .utf8),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let conns = json["connections"] as? [String: Any], let c = conns[peer.deviceID] as? [String: Any]
        else { return false }
        return c["connected"] as? Bool == true
    }

    /// POSTs to the REST API; true on HTTP success.
    @discardableResult
    func post(_ path: String) -> Bool {
        let r = Spawn.run(
            "curl", ["-s", "-f", "-m", "30", "-X", "POST", "-H", "X-API-Key: \(apiKey)", "http://127.0.0.1:\(guiPort)\(path)"],
            stdin: nil, fd3: nil, environment: Self.env, workDir: "/")
        return r.status == 0
    }

    /// Stops or resumes exchanging with `peer`.
    func pause(_ peer: SyncthingDaemon) -> Bool { post("/rest/system/pause?device=\(peer.deviceID)") }
    func resume(_ peer: SyncthingDaemon) -> Bool { post("/rest/system/resume?device=\(peer.deviceID)") }
    /// Scans the shared folder now (returns when the scan is done).
    func scan() -> Bool { post("/rest/db/scan?folder=coffer") }

    /// Starts two daemons that share one folder; waits (≤ 30 s) until they
    /// are connected.
    static func pair(root: String) throws -> (SyncthingDaemon, SyncthingDaemon) {
        let a = try SyncthingDaemon(root: root, name: "a")
        let b = try SyncthingDaemon(root: root, name: "b")
        try a.configure(peer: b)
        try b.configure(peer: a)
        try a.start()
        try b.start()
        guard waitUntil(seconds: 30, { a.isConnected(to: b) && b.isConnected(to: a) }) else {
            a.stop()
            b.stop()
            throw SyncthingError.setup("the two daemons did not connect within 30 s")
        }
        return (a, b)
    }
}

/// Polls `condition` every 100 ms until it holds or `seconds` pass.
func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(100_000)
    }
    return condition()
}

/// Coffer over two real Syncthing daemons on loopback: an edit arrives,
/// concurrent edits converge, a `.sync-conflict-*` copy is merged. Every
/// wait is bounded (≤ 60 s per scenario); daemons are always stopped.
@Suite(
    "coffer sync through real Syncthing",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1", "set COFFER_INTEROP=1 (make test-interop)"))
struct SyncthingInteropTests {
    typealias F = SyncFixture

    /// A vault on `a` synced into `sa.folder`, cloned on `b` from
    /// `sb.folder` once it arrived, and b's bundle back at a.
    static func replicas(_ sa: SyncthingDaemon, _ sb: SyncthingDaemon) -> (TestHome, TestHome)? {
        let a = TestHome()
        let b = TestHome()
        a.initVault()
        F.expectOK(a.unlocked(["add", "db", "--type", "login", "--field", "username=u0", "--secret", "password"], stdin: "p0\n"))
        F.expectOK(a.unlocked(["add", "work/openai", "--type", "api-key", "--secret", "key"], stdin: "sk-0\n"))
        F.expectOK(a.unlocked(["sync", sa.folder]))
        guard waitUntil(seconds: 30, { F.bundles(in: sb.folder).count == 1 }) else { return nil }
        F.expectOK(b.unlocked(["clone", sb.folder]))
        F.expectOK(b.unlocked(["sync", sb.folder]))
        guard waitUntil(seconds: 30, { F.bundles(in: sa.folder).count == 2 }) else { return nil }
        return (a, b)
    }

    static func value(_ h: TestHome, _ item: String, _ field: String) -> String? {
        let r = h.unlocked(["get", item, "--field", field])
        return r.status == 0 ? r.out : nil
    }

    /// Syncs `h` through `dir` until `condition` holds (≤ `seconds`).
    static func syncUntil(_ h: TestHome, _ dir: String, seconds: Double, _ condition: () -> Bool) -> Bool {
        waitUntil(seconds: seconds) {
            _ = h.unlocked(["sync", dir])
            return condition()
        }
    }

    @Test func anEditShowsUpOnTheOtherSide() throws {
        let root = TestHome()
        let (sa, sb) = try SyncthingDaemon.pair(root: root.root.path)
        defer {
            sa.stop()
            sb.stop()
        }
        guard let (a, b) = Self.replicas(sa, sb) else {
            Issue.record("the first bundles did not cross within 30 s")
            return
        }
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=edited-on-a"]))
        F.expectOK(a.unlocked(["sync", sa.folder]))
        let start = Date()
        let arrived = Self.syncUntil(b, sb.folder, seconds: 30) { Self.value(b, "db", "username") == "edited-on-a" }
        #expect(arrived, "the edit did not reach b within 30 s")
        print("syncthing: edit on a readable on b after \(String(format: "%.2f", Date().timeIntervalSince(start))) s (2 items)")
    }

    @Test func concurrentEditsOnBothSidesConverge() throws {
        let root = TestHome()
        let (sa, sb) = try SyncthingDaemon.pair(root: root.root.path)
        defer {
            sa.stop()
            sb.stop()
        }
        guard let (a, b) = Self.replicas(sa, sb) else {
            Issue.record("the first bundles did not cross within 30 s")
            return
        }
        // Same field on both sides (a conflict), different fields, new items.
        F.expectOK(a.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-A\n"))
        F.expectOK(b.unlocked(["edit", "work/openai", "--secret", "key"], stdin: "sk-B\n"))
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=alice"]))
        F.expectOK(b.unlocked(["edit", "db", "--secret", "password"], stdin: "p-bob\n"))
        F.expectOK(a.unlocked(["add", "only/a", "--type", "custom", "--field", "v=a"]))
        F.expectOK(b.unlocked(["add", "only/b", "--type", "custom", "--field", "v=b"]))
        F.expectOK(a.unlocked(["sync", sa.folder]))
        F.expectOK(b.unlocked(["sync", sb.folder]))
        let converged = waitUntil(seconds: 45) {
            _ = a.unlocked(["sync", sa.folder])
            _ = b.unlocked(["sync", sb.folder])
            return Self.value(a, "only/b", "v") == "b" && Self.value(b, "only/a", "v") == "a"
                && a.unlocked(["conflicts", "--json"]).stdout == b.unlocked(["conflicts", "--json"]).stdout
        }
        #expect(converged, "the replicas did not converge within 45 s")
        for h in [a, b] {
            #expect(Self.value(h, "db", "username") == "alice")
            #expect(Self.value(h, "db", "password") == "p-bob")
            let c = h.unlocked(["conflicts", "--json", "--show-secrets"]).stdout
            #expect(c.contains("sk-A") && c.contains("sk-B"), "\(c)")
        }
        #expect(Self.value(a, "work/openai", "key") == Self.value(b, "work/openai", "key"))
    }

    /// Syncthing makes a conflict copy when one file changes on both sides
    /// before either hears of the other's change. Coffer never writes one
    /// file from two machines, so the test makes it happen by hand: while
    /// b's daemon is stopped, a's bundle is rewritten at a, and at b the
    /// same file name receives a bundle of a third replica c; then b's
    /// daemon starts again. Whichever version Syncthing keeps, the other lands in
    /// `*.sync-conflict-*`, and both are merged.
    @Test func aSyncConflictCopyIsMerged() throws {
        let root = TestHome()
        let (sa, sb) = try SyncthingDaemon.pair(root: root.root.path)
        defer {
            sa.stop()
            sb.stop()
        }
        guard let (a, b) = Self.replicas(sa, sb) else {
            Issue.record("the first bundles did not cross within 30 s")
            return
        }
        let c = TestHome()
        F.expectOK(c.unlocked(["clone", sb.folder]))
        F.expectOK(c.unlocked(["add", "from/c", "--type", "custom", "--field", "v=c"]))
        F.expectOK(c.unlocked(["export", "--out", c.path("c.bundle")]))
        let aID = a.unlocked(["replicas", "--json"]).stdout.localReplica ?? "?"
        F.expectOK(a.unlocked(["edit", "db", "--field", "username=a-wins-or-not"]))
        let cBytes = try Data(contentsOf: URL(fileURLWithPath: c.path("c.bundle")))
        // b is down while both files change; each side scans its own change
        // before they meet again. The file a writes gets a new name; the
        // same name is written on b's side (as a copied vault would).
        sb.stop()
        F.expectOK(a.unlocked(["sync", sa.folder]))
        #expect(sa.scan())
        let name = try #require(F.newest(in: sa.folder, replica: aID).map { ($0 as NSString).lastPathComponent })
        try cBytes.write(to: URL(fileURLWithPath: sb.folder + "/" + name))
        try sb.start()
        #expect(waitUntil(seconds: 30) { sa.isConnected(to: sb) })
        let copied = waitUntil(seconds: 45) {
            [sa.folder, sb.folder].allSatisfy { dir in
                ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).contains { $0.contains(".sync-conflict-") }
            }
        }
        // COFFER_KEEP_LOGS=DIR keeps the daemons' logs and folders for a look.
        if !copied, let keep = ProcessInfo.processInfo.environment["COFFER_KEEP_LOGS"] {
            for d in [sa, sb] {
                _ = try? FileManager.default.copyItem(atPath: d.home + "/syncthing.log", toPath: keep + "/" + (d.home as NSString).lastPathComponent + ".log")
                _ = try? FileManager.default.copyItem(atPath: d.folder, toPath: keep + "/" + (d.folder as NSString).lastPathComponent)
            }
        }
        #expect(
            copied,
            "no .sync-conflict- copy appeared on both sides within 45 s: \([sa.folder, sb.folder].map { (try? FileManager.default.contentsOfDirectory(atPath: $0)) ?? [] })"
        )
        let merged = waitUntil(seconds: 45) {
            _ = a.unlocked(["sync", sa.folder])
            _ = b.unlocked(["sync", sb.folder])
            return [a, b].allSatisfy { Self.value($0, "from/c", "v") == "c" && Self.value($0, "db", "username") == "a-wins-or-not" }
        }
        #expect(merged, "the conflict copy and a's edit did not both reach both replicas within 45 s")
    }
}
