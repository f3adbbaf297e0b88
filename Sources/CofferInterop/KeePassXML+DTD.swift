import Foundation

/// Entities declared in a KeePass XML file's own DTD. Coffer's parser reads
/// no DTD (no external entity is fetched, no entity is expanded, so no
/// expansion bomb): a reference to such an entity in a value produces no
/// text, and the value is imported without it. KeePass and KeePassXC never
/// write a DTD, so such a file was made or edited by hand; each entry that
/// uses one is named in a warning (docs/import-export.md#keepass-xml).
///
/// The platform's parser reports neither the declarations nor the
/// references, so they are found in the file's bytes: the internal subset
/// of `<!DOCTYPE … [ … ]>` before the root element, then every
/// `&name;` of a declared name, attributed to the innermost `<Entry>`
/// around it by the entries' order in the file (the parser numbers entries
/// in the same order). ASCII-compatible encodings only (UTF-8, Latin-1,
/// Windows-1252…); in UTF-16 nothing is found and nothing is said.
struct DTDEntityUses: Sendable {
    /// Names of the declared entities used inside each entry, by the
    /// entry's ordinal (0 for the file's first `<Entry`, history entries
    /// counted too).
    var byEntry: [Int: [String]] = [:]
    /// Declared entities used outside any entry (a group's name, …).
    var outside: [String] = []

    var isEmpty: Bool { byEntry.isEmpty && outside.isEmpty }

    static let none = DTDEntityUses()

    /// The uses in the file at `path` (mapped, not read into memory); none
    /// when it cannot be mapped (the parser then reports the problem).
    static func find(path: String) -> DTDEntityUses {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else { return .none }
        return find(data)
    }

    static func find(_ data: some ContiguousBytes) -> DTDEntityUses {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> DTDEntityUses in
            let b = UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: raw.count)
            let (names, body) = declared(b)
            guard !names.isEmpty else { return .none }
            return uses(of: names, in: b, from: body)
        }
    }

    // MARK: Scanning

    static let lt = UInt8(ascii: "<"), gt = UInt8(ascii: ">"), amp = UInt8(ascii: "&"), semicolon = UInt8(ascii: ";")

    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    static func hasPrefix(_ b: UnsafeBufferPointer<UInt8>, _ i: Int, _ p: String) -> Bool {
        let u = Array(p.utf8)
        guard i + u.count <= b.count else { return false }
        for k in 0..<u.count where b[i + k] != u[k] { return false }
        return true
    }

    /// The index just after `end` at or after `i` (`b.count` when absent).
    static func skip(_ b: UnsafeBufferPointer<UInt8>, from i: Int, past end: String) -> Int {
        let u = Array(end.utf8)
        var j = i
        while j + u.count <= b.count {
            if hasPrefix(b, j, end) { return j + u.count }
            j += 1
        }
        return b.count
    }

    /// The general entities the internal DTD subset declares, and where
    /// the root element starts (nothing is declared after it).
    static func declared(_ b: UnsafeBufferPointer<UInt8>) -> (Set<[UInt8]>, Int) {
        var names = Set<[UInt8]>()
        var i = 0
        while i < b.count {
            guard b[i] == lt else {
                i += 1
                continue
            }
            if hasPrefix(b, i, "<?") {
                i = skip(b, from: i + 2, past: "?>")
                continue
            }
            if hasPrefix(b, i, "<!--") {
                i = skip(b, from: i + 4, past: "-->")
                continue
            }
            guard hasPrefix(b, i, "<!DOCTYPE") else { return (names, i) }
            var k = i + 9
            // To the internal subset's `[`, or the declaration's end.
            while k < b.count, b[k] != UInt8(ascii: "["), b[k] != gt { k = skipQuoted(b, k) }
            guard k < b.count, b[k] == UInt8(ascii: "[") else {
                i = k + 1
                continue
            }
            k += 1
            while k < b.count, b[k] != UInt8(ascii: "]") {
                if hasPrefix(b, k, "<!--") {
                    k = skip(b, from: k + 4, past: "-->")
                    continue
                }
                if hasPrefix(b, k, "<!ENTITY") {
                    var m = k + 8
                    while m < b.count, isSpace(b[m]) { m += 1 }
                    if m < b.count, b[m] != UInt8(ascii: "%") {
                        var name: [UInt8] = []
                        while m < b.count, !isSpace(b[m]), b[m] != gt, name.count < 256 {
                            name.append(b[m])
                            m += 1
                        }
                        if !name.isEmpty { names.insert(name) }
                    }
                    k = m
                    continue
                }
                k = skipQuoted(b, k)
            }
            i = k + 1
        }
        return (names, b.count)
    }

    /// Past a quoted string starting at `k`, else one byte on.
    static func skipQuoted(_ b: UnsafeBufferPointer<UInt8>, _ k: Int) -> Int {
        let q = b[k]
        guard q == UInt8(ascii: "\"") || q == UInt8(ascii: "'") else { return k + 1 }
        var j = k + 1
        while j < b.count, b[j] != q { j += 1 }
        return j + 1
    }

    static func uses(of names: Set<[UInt8]>, in b: UnsafeBufferPointer<UInt8>, from start: Int) -> DTDEntityUses {
        var out = DTDEntityUses()
        var open: [Int] = []
        var ordinal = 0
        var i = start
        while i < b.count {
            let c = b[i]
            if c == lt {
                if hasPrefix(b, i, "<!--") {
                    i = skip(b, from: i + 4, past: "-->")
                    continue
                }
                if hasPrefix(b, i, "<![CDATA[") {
                    i = skip(b, from: i + 9, past: "]]>")
                    continue
                }
                if hasPrefix(b, i, "<Entry"), i + 6 < b.count, b[i + 6] == gt || b[i + 6] == UInt8(ascii: "/") || isSpace(b[i + 6]) {
                    var k = i + 6
                    while k < b.count, b[k] != gt { k = skipQuoted(b, k) }
                    let selfClosing = k > 0 && k < b.count && b[k - 1] == UInt8(ascii: "/")
                    if !selfClosing { open.append(ordinal) }
                    ordinal += 1
                    i = k + 1
                    continue
                }
                if hasPrefix(b, i, "</Entry"), i + 7 < b.count, b[i + 7] == gt || isSpace(b[i + 7]) {
                    _ = open.popLast()
                    i += 7
                    continue
                }
                i += 1
                continue
            }
            if c == amp {
                var name: [UInt8] = []
                var k = i + 1
                while k < b.count, b[k] != semicolon, !isSpace(b[k]), b[k] != lt, b[k] != amp, name.count < 256 {
                    name.append(b[k])
                    k += 1
                }
                if k < b.count, b[k] == semicolon, names.contains(name) {
                    let text = String(decoding: name, as: UTF8.self)
                    if let entry = open.last {
                        if !(out.byEntry[entry]?.contains(text) ?? false) { out.byEntry[entry, default: []].append(text) }
                    } else if !out.outside.contains(text) {
                        out.outside.append(text)
                    }
                }
                i = k
                continue
            }
            i += 1
        }
        return out
    }
}
