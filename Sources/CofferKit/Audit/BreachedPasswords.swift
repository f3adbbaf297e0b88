import CofferCrypto
import CofferSystem
import Foundation

/// Somewhere to look up how often a password appears in known breaches,
/// by the SHA-1 of its UTF-8 bytes (the Have I Been Pwned "Pwned
/// Passwords" corpus).
///
/// The lookup is batched: an implementation is handed every digest of a
/// run at once. ``HIBPFile`` (an offline download) searches each one. An
/// online source could implement the same protocol with HIBP's
/// k-anonymity range API: group the digests by their first five hex
/// digits, fetch each range once, and match the suffixes locally, so no
/// digest or password leaves the machine (docs/audit.md).
public protocol BreachSource: Sendable {
    /// A description for people, e.g. "HIBP file /data/pwned.txt".
    var label: String { get }
    /// For each 20-byte SHA-1 digest, how many times the corpus has seen
    /// it (0 when never).
    func breachCounts(sha1 digests: [[UInt8]]) throws(CofferError) -> [Int]
}

extension BreachSource {
    /// The SHA-1 of `password`'s UTF-8 bytes, as the corpus indexes it.
    public static func sha1(_ password: String) -> [UInt8] { BreachLookup.sha1(password) }
}

/// SHA-1 of a password, as Have I Been Pwned indexes them.
public enum BreachLookup {
    public static func sha1(_ password: String) -> [UInt8] {
        BreachCorpusHash.sha1(Array(password.utf8))
    }
}

/// A Have I Been Pwned "Pwned Passwords" SHA-1 file as its official
/// downloader writes it: one `HASH:COUNT` line per password (40 hex
/// digits, a colon, a decimal count; LF or CRLF line ends), sorted by
/// hash. Lookups binary-search a read-only memory map, so a file of tens
/// of gigabytes costs only the pages a search touches; it is never loaded
/// whole.
///
/// A malformed file is reported as ``CofferError/Kind/badData`` naming the
/// byte offset of the bad line: the first line is checked on opening, and
/// every line a search visits is checked both for its form and that it is
/// in order with the lines around it (an unsorted file would otherwise
/// give wrong answers silently).
public final class HIBPFile: BreachSource, @unchecked Sendable {
    public let path: String
    private let map: MappedFile

    /// The longest line accepted: 40 hex digits, a colon, a count of up to
    /// 20 digits, CR LF.
    static let maximumLineLength = 64

    public var label: String { "HIBP file \(path)" }

    /// The file's size in bytes.
    public var size: Int { map.bytes.count }

    /// Opens (maps) the file and checks its first line. Missing or
    /// unreadable: ``CofferError/Kind/fileNotFound`` (66); empty or not in
    /// the format: ``CofferError/Kind/badData`` (65).
    public init(path: String) throws(CofferError) {
        self.path = path
        do {
            map = try MappedFile(path: path)
        } catch {
            switch error {
            case .notFound:
                throw CofferError(.fileNotFound, "the HIBP file \(path) does not exist", hint: HIBPFile.downloadHint)
            case .unreadable(_, let e):
                throw CofferError(.fileNotFound, "cannot read the HIBP file \(path): \(String(cString: strerror(e)))", hint: "check the file's permissions")
            case .notRegularFile:
                throw CofferError(.fileNotFound, "the HIBP file \(path) is not a regular file", hint: HIBPFile.downloadHint)
            }
        }
        guard map.bytes.count > 0 else {
            throw CofferError(.badData, "the HIBP file \(path) is empty", hint: HIBPFile.downloadHint)
        }
        _ = try line(at: 0)
    }

    static let downloadHint =
        "pass a Pwned Passwords SHA-1 file sorted by hash (HASH:COUNT lines), as https://github.com/HaveIBeenPwned/PwnedPasswordsDownloader writes it"

    /// How often the password with this SHA-1 digest was seen (0: never).
    public func count(sha1 digest: [UInt8]) throws(CofferError) -> Int {
        guard digest.count == 20 else { throw CofferError(.usage, "a SHA-1 digest has 20 bytes, not \(digest.count)") }
        var lo = 0
        var hi = map.bytes.count
        var lowKey: [UInt8]? = nil
        var highKey: [UInt8]? = nil
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            // Back to the start of the line holding `mid` (never before lo,
            // which is a line start).
            var start = mid
            while start > lo, map.bytes[start - 1] != UInt8(ascii: "\n") {
                start -= 1
                if mid - start > HIBPFile.maximumLineLength { throw malformed(at: start, "a line longer than \(HIBPFile.maximumLineLength) bytes") }
            }
            let l = try line(at: start)
            if let lowKey, !(compare(lowKey, l.hash) < 0) { throw unsorted(at: start) }
            if let highKey, !(compare(l.hash, highKey) < 0) { throw unsorted(at: start) }
            let c = compare(digest, l.hash)
            if c == 0 { return l.count }
            if c < 0 {
                hi = start
                highKey = l.hash
            } else {
                lo = l.next
                lowKey = l.hash
            }
        }
        return 0
    }

    public func breachCounts(sha1 digests: [[UInt8]]) throws(CofferError) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(digests.count)
        for d in digests { out.append(try count(sha1: d)) }
        return out
    }

    /// The line starting at `start`: its hash (20 bytes), count, and where
    /// the next line starts.
    private func line(at start: Int) throws(CofferError) -> (hash: [UInt8], count: Int, next: Int) {
        let b = map.bytes
        let n = b.count
        var hash = [UInt8](repeating: 0, count: 20)
        var hexDigits = 0
        while hexDigits < 41, start + hexDigits < n, HIBPFile.hexValue(b[start + hexDigits]) != nil { hexDigits += 1 }
        if hexDigits == 32, start + 32 < n, b[start + 32] == UInt8(ascii: ":") {
            throw malformed(at: start, "a 32-digit hash (this is the NTLM download; pass the SHA-1 one)")
        }
        guard start + 41 <= n else { throw malformed(at: start, "a line shorter than a 40-digit hash and a colon") }
        for k in 0..<40 {
            guard let v = HIBPFile.hexValue(b[start + k]) else {
                throw malformed(at: start, "a character that is not a hex digit where the 40-digit hash should be")
            }
            hash[k / 2] |= k % 2 == 0 ? v << 4 : v
        }
        guard b[start + 40] == UInt8(ascii: ":") else { throw malformed(at: start, "no ':' after the 40-digit hash") }
        var i = start + 41
        var count = 0
        var digits = 0
        while i < n, let d = HIBPFile.decimalValue(b[i]) {
            digits += 1
            guard digits <= 18 else { throw malformed(at: start, "a count with more than 18 digits") }
            count = count * 10 + d
            i += 1
        }
        guard digits > 0 else { throw malformed(at: start, "no count after the ':'") }
        if i < n, b[i] == UInt8(ascii: "\r") { i += 1 }
        if i < n {
            guard b[i] == UInt8(ascii: "\n") else { throw malformed(at: start, "unexpected characters after the count") }
            i += 1
        }
        return (hash, count, i)
    }

    private func malformed(at offset: Int, _ what: String) -> CofferError {
        CofferError(
            .badData, "the HIBP file \(path) is malformed: the line at byte \(offset) has \(what)",
            hint: HIBPFile.downloadHint)
    }

    private func unsorted(at offset: Int) -> CofferError {
        CofferError(
            .badData, "the HIBP file \(path) is not sorted by hash (the line at byte \(offset) is out of order)",
            hint: "sort it by hash (e.g. `LC_ALL=C sort -o FILE FILE`) or download the hash-ordered file again")
    }

    private func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for i in 0..<20 where a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
        return 0
    }

    @inline(__always) static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    @inline(__always) static func decimalValue(_ c: UInt8) -> Int? {
        (0x30...0x39).contains(c) ? Int(c - 0x30) : nil
    }
}
