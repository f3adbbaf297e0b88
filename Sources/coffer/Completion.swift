import ArgumentParser
import CofferKit
import Foundation

/// Shell completion of item and field names (bash, zsh, fish; scripts from
/// `coffer --generate-completion-script SHELL`). Names come from the shell
/// session in $COFFER_SESSION; without a usable session completion is
/// silent: it never prompts, prints an error or waits.
enum Completion {
    static let itemNames: @Sendable ([String], Int, String) -> [String] = { words, _, prefix in
        names(prefix: unquote(prefix), words: words)
    }

    static let fieldNames: @Sendable ([String], Int, String) -> [String] = { words, index, prefix in
        fields(prefix: unquote(prefix), words: words, index: index)
    }

    /// Options (of the item verbs) that take a value: their value is not
    /// the item name.
    static let valued: Set<String> = [
        "--vault", "--passphrase-fd", "--passphrase-file", "--field", "--out", "--as", "--clear-after", "--at",
        "--secret", "--unset", "--rename", "--tag", "--untag", "--source", "--expires", "--type", "--policy", "--url",
        "--env-var", "--no-env-var", "--requirements", "--length", "--chars", "--words", "--separator", "--generate",
    ]

    static func vault(words: [String]) -> Vault? {
        // Completion never asks for a passphrase: a session or nothing.
        guard Unlocking.sessionToken() != nil else { return nil }
        var explicit: String?
        if let i = words.firstIndex(of: "--vault"), i + 1 < words.count { explicit = unquote(words[i + 1]) }
        guard let file = try? VaultFile.open(path: VaultLocation.resolve(explicit: explicit)) else { return nil }
        return try? Unlocking.unlock(file)
    }

    static func names(prefix: String, words: [String]) -> [String] {
        guard let vault = vault(words: words), let items = try? vault.list() else { return [] }
        // Complete one path level at a time, like files: `work/` before
        // the names under it.
        var out = Set<String>()
        for s in items where s.name.hasPrefix(prefix) {
            let rest = s.name.dropFirst(prefix.count)
            if let slash = rest.firstIndex(of: "/") {
                out.insert(prefix + rest[...slash])
            } else {
                out.insert(s.name)
            }
        }
        return out.sorted()
    }

    static func fields(prefix: String, words: [String], index: Int) -> [String] {
        // The item is the first word after the verb that is neither an
        // option nor an option's value.
        var i = 2
        var item: String?
        while i < words.count {
            let w = words[i]
            if i == index {
                i += 1
                continue
            }
            if w.hasPrefix("-") {
                i += valued.contains(w) ? 2 : 1
                continue
            }
            item = unquote(w)
            break
        }
        guard let item, let vault = vault(words: words), let it = try? vault.item(named: item) else { return [] }
        return it.fields.map(\.name).filter { $0.hasPrefix(prefix) }
    }

    /// A shell word as typed: drops one level of surrounding quotes and
    /// backslash escapes.
    static func unquote(_ w: String) -> String {
        var s = w
        if s.count >= 2, let f = s.first, f == s.last, f == "'" || f == "\"" {
            s = String(s.dropFirst().dropLast())
        } else if let f = s.first, f == "'" || f == "\"" {
            s = String(s.dropFirst())
        }
        var out = ""
        var escaped = false
        for c in s {
            if escaped {
                out.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        return out
    }
}
