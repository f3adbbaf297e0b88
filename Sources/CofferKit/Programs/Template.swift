import Foundation

/// A `coffer inject` template: text with `{{ coffer://… }}` placeholders
/// (docs/references.md#templates).
///
/// A placeholder is `{{`, optional spaces or tabs, a reference, optional
/// spaces or tabs, `}}`, on one line. `{{ … }}` whose content does not
/// start with `coffer://` is left as it is (other template languages use
/// braces too). A `{{ coffer://` without a closing `}}` on its line is an
/// error.
public struct Template: Sendable {
    public enum Piece: Sendable, Equatable {
        case text(String)
        case reference(Reference)
    }

    public var pieces: [Piece]

    public var references: [Reference] {
        pieces.compactMap { if case .reference(let r) = $0 { return r } else { return nil } }
    }

    /// Parses `text`; `source` names it in errors. With an `environment`,
    /// `${NAME}` in a reference is replaced by that variable's value
    /// (``Reference/init(parsing:environment:)``).
    public init(parsing text: String, source: String, environment: [String: String]? = nil) throws(CofferError) {
        var pieces: [Piece] = []
        var literal = ""
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            literal += rest[..<open.lowerBound]
            let afterOpen = rest[open.upperBound...]
            let inner = afterOpen.drop(while: { $0 == " " || $0 == "\t" })
            guard inner.hasPrefix(Reference.scheme) else {
                literal += "{{"
                rest = afterOpen
                continue
            }
            // Lines end at LF, counted on the unicode-scalar level (a CRLF
            // pair is a single Character, never equal to "\n").
            let lineNumber = text.unicodeScalars[..<open.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
            let lineEnd = inner.unicodeScalars.firstIndex(of: "\n") ?? inner.endIndex
            guard let close = Substring(inner.unicodeScalars[..<lineEnd]).range(of: "}}") else {
                throw CofferError(
                    .badData, "\(source):\(lineNumber): '{{ coffer://' without a closing '}}' on the same line", hint: "write {{ coffer://NAME/FIELD }}")
            }
            var refText = Substring(inner[..<close.lowerBound])
            while let last = refText.last, last == " " || last == "\t" { refText = refText.dropLast() }
            let ref: Reference
            do {
                if let environment {
                    ref = try Reference(parsing: String(refText), environment: environment)
                } else {
                    ref = try Reference(parsing: String(refText))
                }
            } catch {
                throw CofferError(error.kind, "\(source):\(lineNumber): \(error.message)", hint: error.hint)
            }
            if !literal.isEmpty {
                pieces.append(.text(literal))
                literal = ""
            }
            pieces.append(.reference(ref))
            rest = inner[close.upperBound...]
        }
        literal += rest
        if !literal.isEmpty { pieces.append(.text(literal)) }
        self.pieces = pieces
    }

    /// The text with every reference replaced by its value. Every
    /// reference must be in `values`.
    public func render(_ values: [Reference: ResolvedReference]) -> String {
        var out = ""
        for p in pieces {
            switch p {
            case .text(let t): out += t
            case .reference(let r): out += values[r]!.value
            }
        }
        return out
    }
}

/// Replaces secrets in a byte stream with `<concealed>`, also when a
/// secret arrives split across several chunks (`coffer run --mask`).
///
/// Output is held back only while its tail could still be the start of a
/// secret; at a match the longest secret starting there wins.
public struct StreamMasker: Sendable {
    public static let replacement: [UInt8] = Array("<concealed>".utf8)

    let secrets: [[UInt8]]
    /// Whether some secret starts with this byte (the fast path).
    let starts: [Bool]
    var pending: [UInt8] = []

    public init(secrets: [String]) {
        // Longest first, so the longest match at a position wins.
        self.secrets = Array(Set(secrets.filter { !$0.isEmpty }.map { Array($0.utf8) })).sorted { $0.count > $1.count }
        var starts = [Bool](repeating: false, count: 256)
        for s in self.secrets { starts[Int(s[0])] = true }
        self.starts = starts
    }

    public var isEmpty: Bool { secrets.isEmpty }

    /// Feeds a chunk; returns the bytes that can be written now.
    public mutating func feed(_ chunk: some Collection<UInt8>) -> [UInt8] {
        pending.append(contentsOf: chunk)
        return drain(final: false)
    }

    /// Returns everything still held back (at end of stream).
    public mutating func finish() -> [UInt8] { drain(final: true) }

    private mutating func drain(final: Bool) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        let n = pending.count
        scan: while i < n {
            if !starts[Int(pending[i])] {
                out.append(pending[i])
                i += 1
                continue
            }
            for s in secrets {
                let avail = n - i
                if avail >= s.count {
                    if pending[i] == s[0] && pending[i..<(i + s.count)].elementsEqual(s) {
                        out += StreamMasker.replacement
                        i += s.count
                        continue scan
                    }
                } else if !final && pending[i..<n].elementsEqual(s[0..<avail]) {
                    // This secret (longer than any that could match here
                    // after it) may still complete: hold the rest back.
                    break scan
                }
            }
            out.append(pending[i])
            i += 1
        }
        pending.removeFirst(i)
        return out
    }
}
