import CofferKit
import Foundation

/// Shared by read, run, inject and env: unlock once, resolve everything.
enum ReferenceResolution {
    /// Resolves `refs` with one unlock of the vault (none when `refs` is
    /// empty). `context(ref)` prefixes an error message, e.g. with the
    /// variable the reference was meant for.
    static func resolve(
        _ refs: [Reference], options: VaultOptions, context: (Reference) -> String? = { _ in nil }
    ) throws(CofferError) -> [Reference: ResolvedReference] {
        guard !refs.isEmpty else { return [:] }
        let vault = try options.unlock()
        var resolver = ReferenceResolver(vault: vault)
        var out: [Reference: ResolvedReference] = [:]
        for r in refs where out[r] == nil {
            do throws(CofferError) {
                out[r] = try resolver.resolve(r)
            } catch {
                if let prefix = context(r) {
                    var e = error
                    e.message = "\(prefix): \(error.message)"
                    throw e
                }
                throw error
            }
        }
        for item in resolver.usedItems { ItemWarnings.emit(for: item) }
        return out
    }

    /// Reads a UTF-8 text file named on the command line.
    static func readText(_ path: String, what: String) throws(CofferError) -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            if !FileManager.default.fileExists(atPath: path) {
                throw CofferError(.fileNotFound, "\(what) \(path) does not exist", hint: "check the path")
            }
            throw CofferError(.fileNotFound, "cannot read \(what) \(path): \(error.localizedDescription)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CofferError(.badData, "\(what) \(path) is not UTF-8 text")
        }
        return text
    }

    /// Reads all of standard input as UTF-8 text.
    static func readStandardInput(what: String) throws(CofferError) -> String {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard let text = String(data: data, encoding: .utf8) else {
            throw CofferError(.badData, "\(what) on standard input is not UTF-8 text")
        }
        return text
    }
}
