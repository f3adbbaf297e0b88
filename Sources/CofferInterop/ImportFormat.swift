import CofferKit
import Foundation

/// The formats `coffer import --from` reads (docs/import-export.md).
public enum ImportFormat: String, Sendable, CaseIterable {
    case pass
    case keepassXML = "keepass-xml"
    case kdbx
    case bitwardenJSON = "bitwarden-json"
    case onePasswordPUX = "1password-1pux"
    case csv
    case dotenv
    case cofferJSON = "coffer-json"
}

/// The plaintext formats `coffer export --format` writes.
public enum ExportFormat: String, Sendable, CaseIterable {
    case json
    case csv
    case keepassXML = "keepass-xml"
}

/// Something a reader could not carry over, named by entry (never by value).
public struct InterchangeWarning: Sendable, Equatable, CustomStringConvertible {
    /// The entry's name in its file.
    public var entry: String
    public var message: String

    public init(entry: String, _ message: String) {
        self.entry = entry
        self.message = message
    }

    public var description: String { entry.isEmpty ? message : "'\(entry)': \(message)" }
}

/// What a reader produced.
public struct ImportedFile: Sendable {
    public var entries: [InterchangeEntry]
    public var warnings: [InterchangeWarning]

    public init(entries: [InterchangeEntry] = [], warnings: [InterchangeWarning] = []) {
        self.entries = entries
        self.warnings = warnings
    }
}

/// Errors every reader uses: exit 65 naming the file and where in it.
enum ImportError {
    static func bad(_ file: String, _ place: String?, _ why: String, hint: String? = nil) -> CofferError {
        let place = place.map { "\(file): \($0)" } ?? file
        return CofferError(.badData, "\(place): \(why)", hint: hint ?? "fix the file or export it again; nothing was imported")
    }

    /// A missing file is 66, a folder 64, an unreadable file 66.
    static func checkReadable(_ path: String) throws(CofferError) {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            throw CofferError(.fileNotFound, "no file at \(path)", hint: "check the path")
        }
        guard !isDir.boolValue else {
            throw CofferError(.usage, "\(path) is a folder, not a file", hint: "give the exported file (only --from pass takes a folder)")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CofferError(.fileNotFound, "cannot read \(path): permission denied", hint: "check the file's permissions")
        }
    }

    /// Reads a whole file; a missing file is 66, a folder or unreadable 65/66.
    static func read(_ path: String) throws(CofferError) -> Data {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            throw CofferError(.fileNotFound, "no file at \(path)", hint: "check the path")
        }
        guard !isDir.boolValue else {
            throw CofferError(.usage, "\(path) is a folder, not a file", hint: "give the exported file (only --from pass takes a folder)")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        } catch {
            throw CofferError(.fileNotFound, "cannot read \(path): \(error.localizedDescription)", hint: "check the file's permissions")
        }
    }

    /// UTF-8 text (a BOM is dropped); anything else is bad data.
    static func text(_ data: Data, file: String) throws(CofferError) -> String {
        var bytes = data
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        guard let s = String(data: bytes, encoding: .utf8) else {
            throw bad(file, nil, "the file is not UTF-8 text", hint: "export it again as UTF-8")
        }
        return s
    }
}
