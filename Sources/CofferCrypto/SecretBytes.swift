internal import CSodium
import Foundation

/// A fixed-size buffer of secret bytes in libsodium guarded memory.
///
/// The memory is allocated with `sodium_malloc` (guard pages, a canary, and
/// `mlock` where the system allows), kept `PROT_NONE` while nobody is
/// reading it, and wiped by `sodium_free` when the last reference goes.
/// There is deliberately no `description`, `Codable` or `Equatable`
/// conformance that could leak the contents; compare with
/// ``constantTimeEquals(_:)``.
public final class SecretBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// Number of bytes held.
    public let count: Int
    private let lock = NSLock()
    private var readers = 0

    /// Allocates `count` bytes of guarded memory and lets `initialize` fill
    /// them. The buffer is made inaccessible once `initialize` returns.
    package init(count: Int, initialize: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        Sodium.ensure()
        // sodium_malloc(0) is valid but returns a pointer we must not touch;
        // allocate at least one byte so the guard logic stays uniform.
        guard let p = sodium_malloc(max(count, 1)) else {
            fatalError("sodium_malloc failed: out of guarded memory")
        }
        pointer = p
        self.count = count
        SecretMemory.lock(p, max(count, 1))
        do {
            try initialize(UnsafeMutableRawBufferPointer(start: p, count: count))
        } catch {
            sodium_free(p)
            throw error
        }
        Self.checkClosed(sodium_mprotect_noaccess(p))
    }

    /// Copies `bytes` into guarded memory and wipes the source array's
    /// storage (best effort: Swift arrays may have been copied before).
    public convenience init(consuming bytes: inout [UInt8]) {
        let n = bytes.count
        self.init(count: n) { dst in
            bytes.withUnsafeMutableBytes { src in
                if n > 0 {
                    dst.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: n)
                    sodium_memzero(src.baseAddress!, n)
                }
            }
        }
        bytes.removeAll()
    }

    /// Copies a byte collection that is not itself secret (or whose copy is
    /// accepted) into guarded memory.
    public convenience init(copying bytes: some Collection<UInt8>) {
        var copy = Array(bytes)
        self.init(consuming: &copy)
    }

    /// Fresh random bytes from the system CSPRNG.
    public static func random(count: Int) -> SecretBytes {
        SecretBytes(count: count) { buf in
            if count > 0 { randombytes_buf(buf.baseAddress!, count) }
        }
    }

    deinit {
        // sodium_free wipes the region before unmapping it.
        sodium_free(pointer)
    }

    /// Read access to the bytes for the duration of `body`. The region is
    /// read-only inside and inaccessible outside.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        lock.lock()
        if readers == 0 { Self.checkOpened(sodium_mprotect_readonly(pointer), "sodium_mprotect_readonly") }
        readers += 1
        lock.unlock()
        defer {
            lock.lock()
            readers -= 1
            if readers == 0 { Self.checkClosed(sodium_mprotect_noaccess(pointer)) }
            lock.unlock()
        }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Keeps the bytes readable (instead of inaccessible between uses)
    /// for the duration of `body`, so that a bulk operation using this key
    /// thousands of times (importing a bundle) does not pay two `mprotect`
    /// calls per use. The memory stays guarded and is protected again when
    /// `body` returns.
    public func keepingReadable<R>(_ body: () throws -> R) rethrows -> R {
        try withBytes { _ in try body() }
    }

    /// Write access, for filling scratch buffers inside this module.
    func withMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        lock.lock()
        Self.checkOpened(sodium_mprotect_readwrite(pointer), "sodium_mprotect_readwrite")
        readers += 1
        lock.unlock()
        defer {
            lock.lock()
            readers -= 1
            Self.checkClosed(readers == 0 ? sodium_mprotect_noaccess(pointer) : sodium_mprotect_readonly(pointer))
            lock.unlock()
        }
        return try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    // sodium_mprotect_* is mprotect(2) on the pages of the region, and can
    // fail: ENOMEM when the kernel cannot split the mapping (the process
    // has vm.max_map_count mappings, or no memory for the bookkeeping).
    // The two directions are handled differently, by decision:
    //
    // - Opening the region (readonly, readwrite) before a use: when that
    //   fails, the very access that follows faults (SIGSEGV). Stop with a
    //   message saying why instead. withBytes cannot throw a CryptoError
    //   without changing every caller's signature, and there is nothing a
    //   caller could do about it.
    // - Closing it again (noaccess, or back to readonly) after a use: the
    //   bytes stay correct and sodium_free still wipes them; what is lost is
    //   the guard against a stray read of the key while nobody uses it — the
    //   same defence-in-depth an mlock failure loses. Aborting a command
    //   half-way (a vault write) would not protect the key any better, so
    //   the first failure is recorded (SecretMemory.protectFailure) and the
    //   command goes on; the CLI warns at exit, as it does for mlock.

    /// Checks opening the region before a use; see above.
    private static func checkOpened(_ rc: Int32, _ call: StaticString) {
        guard rc != 0 else { return }
        let code = errno
        preconditionFailure(
            "\(call) failed (\(String(cString: strerror(code)))): guarded key memory cannot be made accessible (vm.max_map_count reached?)")
    }

    /// Records a failure to close the region after a use; see above.
    private static func checkClosed(_ rc: Int32) {
        if rc != 0 { SecretMemory.recordProtectFailure(errno) }
    }

    /// Overwrites the bytes with zeros now, without waiting for the last
    /// reference to go (`sodium_free` wipes the region again then): for a
    /// key the program must stop holding while objects that reference it
    /// live on (a vault locked while an app keeps its `Coffer`). A use that
    /// is under way when the wipe happens, or starts after it, reads
    /// zeros: callers make sure nothing still uses the key (CofferKit's
    /// `VaultKeys` waits for its users before wiping). Idempotent.
    package func wipe() {
        withMutableBytes { if $0.count > 0 { sodium_memzero($0.baseAddress!, $0.count) } }
    }

    /// Constant-time comparison (`sodium_memcmp`).
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return withBytes { a in
            other.withBytes { b in
                sodium_memcmp(a.baseAddress!, b.baseAddress!, count) == 0
            }
        }
    }

    /// A copy of the bytes as an ordinary array. Only for secrets that are
    /// about to leave the process anyway (a value printed to stdout); never
    /// use it for keys.
    public func revealedBytes() -> [UInt8] {
        withBytes { Array($0) }
    }

    /// The bytes decoded as UTF-8, for passphrase sources that must be text.
    public var isValidUTF8: Bool {
        withBytes { String(validating: $0, as: UTF8.self) != nil }
    }
}

// Used by CofferSystem's passphrase input, which reads straight into
// guarded memory.
extension SecretBytes {
    /// Write access to freshly allocated scratch memory.
    package func withWritableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try withMutableBytes(body)
    }

    /// A new buffer holding the first `n` bytes, minus one trailing `\n`
    /// (and a `\r` before it).
    package func prefixStrippingNewline(_ n: Int) -> SecretBytes {
        withBytes { src in
            var len = n
            if len > 0, src[len - 1] == UInt8(ascii: "\n") {
                len -= 1
                if len > 0, src[len - 1] == UInt8(ascii: "\r") { len -= 1 }
            }
            return SecretBytes(count: len) { dst in
                if len > 0 { dst.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: len) }
            }
        }
    }
}
