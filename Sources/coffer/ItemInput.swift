import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

/// Turns `--field`, `--secret` and `--url` options into fields, reading
/// secret values from stdin or a no-echo prompt, never from argv unless
/// the user put them there (and then with a warning).
enum ItemInput {
    /// `KEY=VALUE` pairs from `--field`.
    static func parseAssignments(_ raw: [String], type: ItemType) throws(CofferError) -> [Field] {
        var out: [Field] = []
        for a in raw {
            guard let eq = a.firstIndex(of: "="), eq != a.startIndex else {
                throw CofferError(.usage, "--field expects KEY=VALUE, got '\(a.split(separator: "=").first ?? "")…'")
            }
            let key = String(a[..<eq])
            let value = String(a[a.index(after: eq)...])
            let secret = type.defaultSecrecy(of: key)
            if secret {
                Output.warn(
                    "'\(key)' is a secret field and its value was given on the command line, where other processes and shell history can see it; prefer --secret \(key)"
                )
            }
            out.append(Field(name: key, value: value, isSecret: secret))
        }
        return out
    }

    /// Reads one secret value: from stdin when it is not a terminal, else
    /// from a no-echo prompt.
    static func readSecret(named key: String, stdinUsed: inout Bool) throws(CofferError) -> String {
        let bytes: SecretBytes
        do {
            if !Output.stdinIsTerminal {
                guard !stdinUsed else {
                    throw CofferError(
                        .usage, "only one secret value can be read from standard input",
                        hint: "run the command on a terminal to be prompted for each, or add the other fields with `coffer edit`")
                }
                stdinUsed = true
                bytes = try SecretInput.read(fd: 0)
            } else {
                bytes = try SecretInput.prompt("Value for \(key): ")
            }
        } catch let e as SecretInputError {
            throw PassphraseSource.translate(e)
        } catch let e as CofferError {
            throw e
        } catch {
            throw CofferError(.internalError, "\(error)")
        }
        guard let text = String(validating: bytes.revealedBytes(), as: UTF8.self) else {
            throw CofferError(.badData, "the value for '\(key)' is not UTF-8 text")
        }
        guard !text.isEmpty else {
            throw CofferError(.usage, "the value for '\(key)' is empty", hint: "pipe the value in, e.g. `printf %s \"$KEY\" | coffer add …`")
        }
        return text
    }

    /// Reads a TOTP secret (otpauth:// URI or base32) and checks it
    /// (exit 65 naming the bad part) before anything is stored.
    static func readTOTP(stdinUsed: inout Bool) throws(CofferError) -> Field {
        let text = try readSecret(named: "totp", stdinUsed: &stdinUsed).trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try TOTP.parse(text)
        return Field(name: "totp", value: text, isSecret: true)
    }
}
