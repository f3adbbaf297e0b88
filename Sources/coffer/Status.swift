import ArgumentParser
import CofferKit
import Foundation

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the vault and whether this shell's session unlocks it.",
        discussion: """
            Needs no passphrase: prints the vault path, vault id, replica id, format version, item \
            count, Argon2id parameters, and whether $COFFER_SESSION unlocks this vault (and until \
            when). Checking does not count as using the session. Exit 0 whether locked or not. \
            --json output follows Schemas/status.schema.json.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let file = try options.openFile()
        let info = try file.info()
        let directory = SessionDirectory.resolve()
        var session: SessionInfo?
        var reason: String? = "no session in this shell (COFFER_SESSION is not set)"
        if let token = SessionEnvironment.token {
            switch Session.check(file: file, token: token, directory: directory) {
            case .success(let s):
                session = s
                reason = nil
            case .failure(let e):
                reason = ErrorWords.message(e)
            }
        }
        directory.sweep()
        SessionFolderWarnings.report(directory)
        let others = directory.sessions().filter { $0.vaultID == info.vaultID && $0.expiresAt > Date() }.count
        if json {
            try Output.json(
                StatusJSON(
                    vault: info.path, vaultId: info.vaultID.hex, replicaId: info.replicaID.hex,
                    formatVersion: info.formatVersion, itemCount: info.itemCount, createdAt: info.createdAt,
                    kdf: .init(algorithm: "argon2id", memoryKiB: info.kdf.memoryKiB, iterations: info.kdf.iterations, parallelism: info.kdf.parallelism),
                    locked: session == nil, lockedReason: reason,
                    session: session.map {
                        .init(
                            id: $0.id, expiresAt: $0.expiresAt, lifetimeEndsAt: $0.lifetimeEndsAt, lastUsedAt: $0.lastUsedAt, idleTimeoutSeconds: $0.idleTimeout
                        )
                    },
                    activeSessions: others, sessionDirectory: directory.path,
                    counter: info.counter, counterSeenElsewhere: info.counterSeenElsewhere, keyEpoch: file.keyEpoch.number))
            return
        }
        var lines = [
            "vault:          \(info.path)",
            "vault id:       \(info.vaultID.hex)",
            "replica id:     \(info.replicaID.hex)",
            "format version: \(info.formatVersion)",
            "key epoch:      \(file.keyEpoch.number)"
                + (file.keyEpoch.rekeyedBy.map {
                    " (master key rotated on \($0.hex.prefix(8)) at \(ISO8601.string(Date(timeIntervalSince1970: Double(file.keyEpoch.rekeyedAt) / 1000))))"
                } ?? ""),
            "items:          \(info.itemCount)",
            "kdf:            argon2id, \(info.kdf.memoryKiB / 1024) MiB, \(info.kdf.iterations) iterations, \(info.kdf.parallelism) lanes",
        ]
        if let s = session {
            lines.append("state:          unlocked by this shell's session")
            lines.append(
                "session ends:   \(ISO8601.string(s.expiresAt)) if unused (idle timeout \(SessionDuration.format(s.idleTimeout))), \(ISO8601.string(s.lifetimeEndsAt)) at the latest"
            )
        } else {
            lines.append("state:          locked: \(reason ?? "")")
        }
        lines.append("sessions:       \(others) active for this vault")
        lines.append("writes:         counter \(info.counter), highest known \(info.counterSeenElsewhere)")
        if info.counterSeenElsewhere > info.counter {
            Output.warn(
                "this vault file is older than what other replicas saw from it (they saw counter \(info.counterSeenElsewhere), the file is at \(info.counter)): it was restored or rolled back; its next write takes a new replica id"
            )
        }
        Output.out(lines.joined(separator: "\n"))
    }
}

struct StatusJSON: Encodable {
    struct KDF: Encodable {
        var algorithm: String
        var memoryKiB: UInt32
        var iterations: UInt32
        var parallelism: UInt32
    }
    struct SessionJSON: Encodable {
        var id: String
        var expiresAt: Date
        var lifetimeEndsAt: Date
        var lastUsedAt: Date
        var idleTimeoutSeconds: Int64
    }
    var vault: String
    var vaultId: String
    var replicaId: String
    var formatVersion: Int
    var itemCount: Int
    var createdAt: Date
    var kdf: KDF
    var locked: Bool
    @NullEncoded var lockedReason: String?
    @NullEncoded var session: SessionJSON?
    var activeSessions: Int
    var sessionDirectory: String
    var counter: UInt64
    var counterSeenElsewhere: UInt64
    var keyEpoch: UInt64
}
