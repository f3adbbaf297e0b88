import ArgumentParser
import CofferKit
import Foundation

struct Otp: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otp",
        abstract: "Print the current TOTP code of an item.",
        discussion: """
            Reads the item's `totp` field (--field to choose another): an otpauth://totp/… URI or a \
            bare base32 secret. SHA1, SHA256, SHA512; 6–8 digits; any period (RFC 6238); Steam Guard's \
            five characters with `encoder=steam` (as KeePassXC writes it). The \
            seconds until the code changes go to stderr. Store one with \
            `coffer add NAME --type login … --totp-uri -` or `coffer edit NAME --totp` (read from \
            stdin or a prompt). --json prints Schemas/otp.schema.json.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Option(help: "The field holding the otpauth URI or base32 secret.", completion: .custom(Completion.fieldNames))
    var field = Otp.defaultField

    /// The default of `--field`, which the fast path (FastPath.swift) uses too.
    static let defaultField = "totp"

    @Option(help: ArgumentHelp("Compute the code for this time (seconds since 1970) instead of now.", valueName: "unix-time"))
    var at: String?

    @Flag(help: "Print JSON (Schemas/otp.schema.json).")
    var json = false

    func run() throws {
        var time: Int64?
        if let at {
            guard let t = Int64(at), t >= 0 else {
                throw CofferError(.usage, "--at expects a number of seconds since 1970, got '\(at.prefix(32))'")
            }
            time = t
        }
        try Otp.execute(vault: try options.unlock(), name: name, field: field, at: time, json: json)
    }

    /// Shared with ``FastPath``.
    static func execute(vault: Vault, name: String, field: String, at: Int64?, json: Bool) throws {
        let time = at ?? Int64(Date().timeIntervalSince1970)
        let item = try vault.item(named: name)
        ItemWarnings.emit(for: item)
        guard let f = item.field(field) else {
            throw CofferError(
                .itemNotFound, "item '\(item.name)' has no field '\(field)'",
                hint: "store a TOTP secret with `coffer edit \(item.name) --totp` (the otpauth:// URI or base32 secret on stdin)")
        }
        let totp: TOTP
        do { totp = try TOTP.parse(f.value) } catch {
            var e = error
            e.message = "field '\(field)' of '\(item.name)': \(error.message)"
            throw e
        }
        let code = totp.code(at: time)
        let remaining = totp.secondsRemaining(at: time)
        if json {
            try Output.json(
                OtpJSON(
                    name: item.name, code: code, digits: totp.digits, period: totp.period, algorithm: totp.algorithm.rawValue, remaining: remaining, time: time)
            )
        } else {
            Output.out(code)
        }
        if Output.stderrIsTerminal || at == nil {
            Output.note("\(remaining)s left")
        }
    }
}

struct OtpJSON: Encodable {
    var name: String
    var code: String
    var digits: Int
    var period: Int
    var algorithm: String
    var remaining: Int
    var time: Int64
}
