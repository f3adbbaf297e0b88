import CofferCrypto
import Testing

/// libsodium calls whose failure used to be ignored. Each failure left the
/// output buffer as it was — a sub-key of `sodium_malloc`'s 0xdb filler, a
/// hash of zeros equal for every message — and handed it back as a result.
/// They fail only when misused (a length outside libsodium's range), so
/// misuse now stops the process with a message instead.
@Suite("libsodium return codes")
struct SodiumReturnCodeTests {
    @Test func subKeysOfEveryAllowedLength() {
        let master = SecretBytes(copying: [UInt8](repeating: 7, count: 32))
        for length in [16, 32, 64] {
            let k = SubKey.derive(from: master, id: 1, length: length)
            #expect(k.count == length)
            #expect(k.revealedBytes() != [UInt8](repeating: 0xdb, count: length))
        }
    }

    @Test func keyedHashesWithTheLongestKey() {
        let key = SecretBytes(copying: [UInt8](repeating: 1, count: 64))
        let a = KeyedHash.hash([1], key: key)
        let b = KeyedHash.hash([2], key: key)
        #expect(a != b)
        #expect(a != [UInt8](repeating: 0, count: 32))
        #expect(PreparedKeyedHash(key: key).hash([1]) == a)
        #expect(KeyedHash.deriveKey(from: key, label: [1]).count == 32)
    }

    #if os(Linux) || os(macOS)
    @Test func aSubKeyLengthOutsideLibsodiumsRangeStops() async {
        await #expect(processExitsWith: .failure) {
            let master = SecretBytes(copying: [UInt8](repeating: 7, count: 32))
            _ = SubKey.derive(from: master, id: 1, length: 8)
        }
        await #expect(processExitsWith: .failure) {
            let master = SecretBytes(copying: [UInt8](repeating: 7, count: 32))
            _ = SubKey.derive(from: master, id: 1, length: 65)
        }
    }

    @Test func aHashKeyLongerThanBlake2bTakesStops() async {
        await #expect(processExitsWith: .failure) {
            _ = KeyedHash.hash([1], key: SecretBytes(copying: [UInt8](repeating: 1, count: 65)))
        }
        await #expect(processExitsWith: .failure) {
            _ = KeyedHash.deriveKey(from: SecretBytes(copying: [UInt8](repeating: 1, count: 65)), label: [1])
        }
        await #expect(processExitsWith: .failure) {
            _ = PreparedKeyedHash(key: SecretBytes(copying: [UInt8](repeating: 1, count: 65)))
        }
    }
    #endif

    @Test func guardedMemoryIsProtectedWithoutFailure() {
        let s = SecretBytes(copying: [1, 2, 3])
        #expect(s.revealedBytes() == [1, 2, 3])
        s.keepingReadable { #expect(s.constantTimeEquals(SecretBytes(copying: [1, 2, 3]))) }
        #expect(SecretMemory.protectFailure == nil)
    }
}
