import CofferCrypto
import CofferSystem
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

#if canImport(Glibc)
import Glibc
#endif

/// The agent protocol against its real socket, in process: a vault with
/// keys, ``SSHAgentServer`` listening in a temporary folder, and a client
/// speaking the wire format byte by byte.
@Suite("SSH agent protocol over its socket")
struct SSHAgentTests {
    /// A vault with an Ed25519, an ECDSA and an RSA key, and an agent
    /// serving it.
    final class Fixture: @unchecked Sendable {
        let box: TemporaryVault
        let coffer: Coffer
        let agent: SSHAgent
        let server: SSHAgentServer
        let socket: String
        var keys: [SSHPrivateKey] = []
        let logged = Locked<[String]>([])

        init(options: SSHAgent.Options = .init(), confirm: Bool = false) throws {
            box = try TemporaryVault()
            for (name, type, bits) in [("ssh/b-ed", SSHKeyType.ed25519, nil), ("ssh/a-ec", .ecdsaP256, nil), ("ssh/c-rsa", .rsa, 2048)]
                as [(String, SSHKeyType, Int?)]
            {
                let k = try SSHPrivateKey.generate(type, bits: bits, comment: name)
                try box.vault.addSSHKey(k, name: name, confirm: confirm && type == .ed25519)
                keys.append(k)
            }
            coffer = Coffer(vault: box.vault)
            agent = SSHAgent(coffer: coffer, options: options)
            let logged = self.logged
            agent.log = { line in logged.withLock { $0.append(line) } }
            socket = box.directory.path("agent/s.sock")
            server = try SSHAgentServer(agent: agent, socketPath: socket)
            server.start()
        }

        deinit { server.stop() }

        func connect() throws -> UnixConnection { try UnixConnection.connect(path: socket) }
    }

    static func frame(_ body: [UInt8]) -> [UInt8] { SSHAgentServer.frame(body) }

    /// Sends one request and reads one reply (type and contents); nil when
    /// the agent closed the connection.
    static func request(_ c: UnixConnection, _ body: [UInt8]) -> [UInt8]? {
        guard c.write(frame(body)) else { return nil }
        return reply(c)
    }

    static func reply(_ c: UnixConnection) -> [UInt8]? {
        guard let h = c.read(exactly: 4) else { return nil }
        let n = Int(h[0]) << 24 | Int(h[1]) << 16 | Int(h[2]) << 8 | Int(h[3])
        return c.read(exactly: n)
    }

    /// The listed identities (blob, comment).
    static func identities(_ c: UnixConnection) throws -> [(blob: [UInt8], comment: String)] {
        let r = try #require(request(c, [SSHAgent.Message.requestIdentities]))
        #expect(r.first == SSHAgent.Message.identitiesAnswer)
        var reader = SSHReader(r, offset: 1)
        let n = try reader.uint32()
        var out: [(blob: [UInt8], comment: String)] = []
        for _ in 0..<n { out.append((try reader.string(), try reader.text())) }
        #expect(reader.isAtEnd)
        return out
    }

    static func signRequest(_ blob: [UInt8], _ data: [UInt8], flags: UInt32) -> [UInt8] {
        var w = SSHWriter()
        w.byte(SSHAgent.Message.signRequest)
        w.string(blob)
        w.string(data)
        w.uint32(flags)
        return w.bytes
    }

    /// The signature blob of a SIGN_RESPONSE, or nil for a failure.
    static func sign(_ c: UnixConnection, _ blob: [UInt8], _ data: [UInt8], flags: UInt32 = 0) throws -> [UInt8]? {
        let r = try #require(request(c, signRequest(blob, data, flags: flags)))
        if r == [SSHAgent.Message.failure] { return nil }
        #expect(r.first == SSHAgent.Message.signResponse)
        var reader = SSHReader(r, offset: 1)
        let sig = try reader.string()
        #expect(reader.isAtEnd)
        return sig
    }

    @Test("the socket is 0600 in a 0700 folder")
    func socketModes() throws {
        let f = try Fixture()
        var st = stat()
        #expect(lstat(f.socket, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o600)
        #expect(stat((f.socket as NSString).deletingLastPathComponent, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o700)
        // A second agent on the same live socket is refused.
        let second = #expect(throws: CofferError.self) { _ = try SSHAgentServer(agent: f.agent, socketPath: f.socket) }
        #expect(second?.kind == .cannotCreate)
    }

    @Test("the vault's keys are listed in name order and each signs (RSA with SHA-256 and SHA-512)")
    func listAndSign() throws {
        let f = try Fixture()
        let c = try f.connect()
        let ids = try Self.identities(c)
        #expect(ids.map(\.comment) == ["ssh/a-ec", "ssh/b-ed", "ssh/c-rsa"])
        let data = Array("session data".utf8)
        for k in f.keys {
            let flags: [UInt32] = k.type == .rsa ? [SSHSignatureFlags.rsaSHA256, SSHSignatureFlags.rsaSHA512] : [0]
            for fl in flags {
                let sig = try #require(try Self.sign(c, k.publicKeyBlob, data, flags: fl))
                #expect(SSHPublicKey.verify(signature: sig, of: data, by: k.publicKeyBlob))
            }
        }
        // RSA with SHA-1 (no flag), and a key the agent does not hold: failure.
        let rsa = try #require(f.keys.first { $0.type == .rsa })
        #expect(try Self.sign(c, rsa.publicKeyBlob, data) == nil)
        let stranger = try SSHPrivateKey.generate(.ed25519, comment: "x")
        #expect(try Self.sign(c, stranger.publicKeyBlob, data) == nil)
    }

    @Test("unknown, truncated, empty and trailing-garbage messages get SSH_AGENT_FAILURE and the connection goes on")
    func badMessages() throws {
        let f = try Fixture()
        let c = try f.connect()
        let ed = f.keys[0].publicKeyBlob
        var bad: [[UInt8]] = [[], [0], [1], [2], [9], [28], [99], [200], [255], [SSHAgent.Message.requestIdentities, 0]]
        let full = Self.signRequest(ed, [1, 2, 3], flags: 0)
        for n in 1..<full.count { bad.append(Array(full[0..<n])) } // every truncation of a sign request
        bad.append(full + [0])
        bad.append([SSHAgent.Message.signRequest, 0xff, 0xff, 0xff, 0xff]) // a string longer than the message
        bad.append([SSHAgent.Message.addIdentity, 0, 0, 0, 3, 0x61, 0x62, 0x63])
        bad.append([SSHAgent.Message.extension, 0, 0, 0, 4, 0x74, 0x65, 0x73, 0x74])
        bad.append([SSHAgent.Message.removeIdentity, 0, 0, 0, 1, 0])
        for m in bad {
            #expect(Self.request(c, m) == [SSHAgent.Message.failure], "message \(m.prefix(8))")
        }
        #expect(try Self.identities(c).count == 3)
    }

    @Test("an oversized length is refused and its connection closed; the agent keeps serving")
    func oversized() throws {
        let f = try Fixture()
        let c = try f.connect()
        let n = UInt32(SSHAgentServer.maxMessage + 1)
        #expect(c.write([UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), 11]))
        #expect(Self.reply(c) == [SSHAgent.Message.failure])
        #expect(Self.reply(c) == nil) // closed
        // The largest accepted message is served.
        let big = Self.signRequest(f.keys[0].publicKeyBlob, [UInt8](repeating: 7, count: SSHAgentServer.maxMessage - 200), flags: 0)
        let d = try f.connect()
        let r = try #require(Self.request(d, big))
        #expect(r.first == SSHAgent.Message.signResponse)
    }

    @Test("a client closing mid-message or mid-length does not disturb the agent")
    func closedMidMessage() throws {
        let f = try Fixture()
        for partial in [
            [0, 0] as [UInt8], [0, 0, 0, 100, 13, 0, 0], Self.frame(Self.signRequest(f.keys[0].publicKeyBlob, [1], flags: 0)).dropLast(3).map { $0 },
        ] {
            let c = try f.connect()
            #expect(c.write(partial))
            c.close()
        }
        let c = try f.connect()
        #expect(try Self.identities(c).count == 3)
    }

    @Test("10,000 requests on one connection are all answered")
    func manyRequests() throws {
        let f = try Fixture()
        let c = try f.connect()
        let ed = f.keys[0].publicKeyBlob
        var answered = 0
        for i in 0..<10_000 {
            let r: [UInt8]?
            switch i % 3 {
            case 0: r = Self.request(c, [SSHAgent.Message.requestIdentities])
            case 1: r = Self.request(c, Self.signRequest(ed, [UInt8(i & 0xff)], flags: 0))
            default: r = Self.request(c, [77])
            }
            if let r, !r.isEmpty { answered += 1 }
        }
        #expect(answered == 10_000)
    }

    @Test("100 concurrent clients are all answered")
    func concurrentClients() async throws {
        let f = try Fixture()
        let ed = f.keys[0]
        let ok = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<100 {
                group.addTask {
                    guard let c = try? f.connect(), let sig = try? Self.sign(c, ed.publicKeyBlob, [UInt8(i)]) else { return false }
                    return SSHPublicKey.verify(signature: sig, of: [UInt8(i)], by: ed.publicKeyBlob)
                }
            }
            var n = 0
            for await r in group where r { n += 1 }
            return n
        }
        #expect(ok == 100)
    }

    @Test("ssh-add's keys are held in memory, listed after the vault's, removed one by one or all")
    func addedKeys() throws {
        let f = try Fixture()
        let c = try f.connect()
        let extra = try SSHPrivateKey.generate(.ed25519, comment: "added")
        #expect(Self.request(c, [SSHAgent.Message.addIdentity] + extra.agentEncoding().revealedBytes()) == [SSHAgent.Message.success])
        #expect(try Self.identities(c).map(\.comment) == ["ssh/a-ec", "ssh/b-ed", "ssh/c-rsa", "added"])
        let sig = try #require(try Self.sign(c, extra.publicKeyBlob, [5]))
        #expect(SSHPublicKey.verify(signature: sig, of: [5], by: extra.publicKeyBlob))
        #expect(try f.box.vault.list().count == 3) // not stored
        var remove = SSHWriter()
        remove.byte(SSHAgent.Message.removeIdentity)
        remove.string(extra.publicKeyBlob)
        #expect(Self.request(c, remove.bytes) == [SSHAgent.Message.success])
        #expect(Self.request(c, remove.bytes) == [SSHAgent.Message.failure])
        #expect(try Self.identities(c).count == 3)
        // A lifetime constraint: gone once it passes.
        var constrained = [SSHAgent.Message.addIdentityConstrained] + extra.agentEncoding().revealedBytes()
        constrained += [1, 0, 0, 0, 1]
        #expect(Self.request(c, constrained) == [SSHAgent.Message.success])
        #expect(try Self.identities(c).count == 4)
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try Self.identities(c).count == 3)
        // An unknown constraint is refused.
        #expect(Self.request(c, [SSHAgent.Message.addIdentityConstrained] + extra.agentEncoding().revealedBytes() + [99]) == [SSHAgent.Message.failure])
        #expect(Self.request(c, [SSHAgent.Message.addIdentity] + extra.agentEncoding().revealedBytes()) == [SSHAgent.Message.success])
        #expect(Self.request(c, [SSHAgent.Message.removeAllIdentities]) == [SSHAgent.Message.success])
        #expect(try Self.identities(c).count == 3)
    }

    @Test("--store-added keeps an added key as an ssh-key item")
    func storeAdded() throws {
        let f = try Fixture(options: .init(prefix: "ssh/", storeAdded: true))
        let c = try f.connect()
        let extra = try SSHPrivateKey.generate(.ecdsaP384, comment: "me@laptop")
        #expect(Self.request(c, [SSHAgent.Message.addIdentity] + extra.agentEncoding().revealedBytes()) == [SSHAgent.Message.success])
        let stored = try f.box.vault.sshKey(named: "ssh/me@laptop")
        #expect(stored.key.publicKeyBlob == extra.publicKeyBlob)
        #expect(try Self.identities(c).count == 4)
    }

    @Test("a client's lock hides and stops every key until the same passphrase unlocks")
    func clientLock() throws {
        let f = try Fixture()
        let c = try f.connect()
        var lock = SSHWriter()
        lock.byte(SSHAgent.Message.lock)
        lock.string("lock words")
        #expect(Self.request(c, lock.bytes) == [SSHAgent.Message.success])
        #expect(Self.request(c, lock.bytes) == [SSHAgent.Message.failure]) // already locked
        #expect(try Self.identities(c).isEmpty)
        #expect(try Self.sign(c, f.keys[0].publicKeyBlob, [1]) == nil)
        var wrong = SSHWriter()
        wrong.byte(SSHAgent.Message.unlock)
        wrong.string("lock word")
        #expect(Self.request(c, wrong.bytes) == [SSHAgent.Message.failure])
        var right = SSHWriter()
        right.byte(SSHAgent.Message.unlock)
        right.string("lock words")
        #expect(Self.request(c, right.bytes) == [SSHAgent.Message.success])
        #expect(try Self.identities(c).count == 3)
    }

    @Test("session-bind@openssh.com is accepted only with the host's valid signature")
    func sessionBind() throws {
        let f = try Fixture()
        let c = try f.connect()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "host")
        let sessionID = Array(repeating: UInt8(0x42), count: 32)
        func bind(_ signature: [UInt8]) -> [UInt8] {
            var w = SSHWriter()
            w.byte(SSHAgent.Message.extension)
            w.string("session-bind@openssh.com")
            w.string(host.publicKeyBlob)
            w.string(sessionID)
            w.string(signature)
            w.byte(0)
            return w.bytes
        }
        #expect(Self.request(c, bind(try host.sign(sessionID))) == [SSHAgent.Message.success])
        #expect(Self.request(c, bind(try host.sign([1, 2]))) == [SSHAgent.Message.failure])
    }

    @Test("a key restricted to hosts signs only on a connection bound to one of them, and is not listed on one bound elsewhere")
    func hostRestriction() throws {
        let f = try Fixture()
        let allowed = try SSHPrivateKey.generate(.ed25519, comment: "host-a")
        let other = try SSHPrivateKey.generate(.ecdsaP256, comment: "host-b")
        let key = try SSHPrivateKey.generate(.ed25519, comment: "restricted")
        var draft = SSHKeyItem.draft(key, name: "ssh/restricted", confirm: false)
        draft.fields.append(Field(name: SSHKeyItem.hostsField, value: "SHA256:notthisone, \(allowed.fingerprint)", isSecret: false))
        try f.box.vault.add(draft)
        func bind(_ c: UnixConnection, _ host: SSHPrivateKey, forwarded: Bool = false) throws {
            let sessionID = Array(repeating: UInt8(7), count: 32)
            var w = SSHWriter()
            w.byte(SSHAgent.Message.extension)
            w.string("session-bind@openssh.com")
            w.string(host.publicKeyBlob)
            w.string(sessionID)
            w.string(try host.sign(sessionID))
            w.byte(forwarded ? 1 : 0)
            #expect(Self.request(c, w.bytes) == [SSHAgent.Message.success])
        }
        // Unbound (ssh-keygen -Y, git): listed, but no signature.
        let unbound = try f.connect()
        #expect(try Self.identities(unbound).map(\.comment).contains("restricted"))
        #expect(try Self.sign(unbound, key.publicKeyBlob, [1]) == nil)
        // Bound to the allowed host: signs.
        let good = try f.connect()
        try bind(good, allowed)
        #expect(try Self.identities(good).map(\.comment).contains("restricted"))
        let sig = try #require(try Self.sign(good, key.publicKeyBlob, [1]))
        #expect(SSHPublicKey.verify(signature: sig, of: [1], by: key.publicKeyBlob))
        // Bound to another host: neither listed nor signing; the others still are.
        let bad = try f.connect()
        try bind(bad, other)
        #expect(try Self.identities(bad).map(\.comment) == ["ssh/a-ec", "ssh/b-ed", "ssh/c-rsa"])
        #expect(try Self.sign(bad, key.publicKeyBlob, [1]) == nil)
        // A forwarded connection: no signature even for the allowed host.
        let forwarded = try f.connect()
        try bind(forwarded, allowed, forwarded: true)
        #expect(try Self.sign(forwarded, key.publicKeyBlob, [1]) == nil)
    }

    @Test("keys changed in the vault by another process are served without a restart")
    func freshKeys() throws {
        let f = try Fixture()
        let c = try f.connect()
        #expect(try Self.identities(c).count == 3)
        // Another "process": the same file opened and unlocked again.
        let other = try VaultFile.open(path: f.box.vault.path).unlock(passphrase: SecretBytes(copying: Array("pw".utf8)))
        let k = try SSHPrivateKey.generate(.ed25519, comment: "later")
        try other.addSSHKey(k, name: "ssh/later")
        try other.delete("ssh/a-ec")
        let ids = try Self.identities(c)
        #expect(ids.map(\.comment) == ["ssh/b-ed", "ssh/c-rsa", "later"])
        #expect(try Self.sign(c, k.publicKeyBlob, [1]) != nil)
        #expect(try Self.sign(c, f.keys[1].publicKeyBlob, [1]) == nil) // the deleted ECDSA key
    }

    @Test("once the vault is locked the agent lists no keys and signs nothing")
    func vaultLocked() async throws {
        let f = try Fixture()
        let c = try f.connect()
        #expect(try Self.identities(c).count == 3)
        await f.coffer.lock()
        #expect(try Self.identities(c).isEmpty)
        #expect(try Self.sign(c, f.keys[0].publicKeyBlob, [1]) == nil)
        #expect(f.logged.withLock { $0 }.contains { $0.contains("locked") })
    }

    @Test("a confirm key asks SSH_ASKPASS: exit 0 signs, anything else or no SSH_ASKPASS refuses")
    func confirm() throws {
        let dir = TemporaryDirectory()
        let yes = dir.path("yes")
        let no = dir.path("no")
        let record = dir.path("asked")
        try "#!/bin/sh\nprintf '%s|%s' \"$SSH_ASKPASS_PROMPT\" \"$1\" > \(record)\nexit 0\n".write(toFile: yes, atomically: true, encoding: .utf8)
        try "#!/bin/sh\nexit 1\n".write(toFile: no, atomically: true, encoding: .utf8)
        chmod(yes, 0o755)
        chmod(no, 0o755)
        for (askpass, signs) in [(yes, true), (no, false), ("", false)] {
            var env = ["PATH": "/usr/bin:/bin"]
            if !askpass.isEmpty { env["SSH_ASKPASS"] = askpass }
            let f = try Fixture(options: .init(environment: env), confirm: true)
            let c = try f.connect()
            let ed = try #require(f.keys.first { $0.type == .ed25519 })
            #expect((try Self.sign(c, ed.publicKeyBlob, [1]) != nil) == signs)
            // Keys without confirm never ask.
            #expect(try Self.sign(c, f.keys[1].publicKeyBlob, [1]) != nil)
        }
        let asked = try String(contentsOfFile: record, encoding: .utf8)
        #expect(asked.hasPrefix("confirm|Allow use of key ssh/b-ed?"))
    }
}
