import CofferKit

/// How the command line words a ``CofferError``.
///
/// CofferKit says what went wrong and what to do in words that name no
/// command or option (an application prints them to its own users), and
/// says it again as data: ``CofferError/Remedy`` (an action and the item,
/// field or path it concerns) and ``CofferError/argument`` (which input of
/// the call was wrong). Here the command line turns that data into its own
/// words: "list the vault's items" becomes "list items with `coffer ls`",
/// "the length must be …" becomes "--length must be …". An action this
/// table does not know is shown in CofferKit's words.
enum ErrorWords {
    /// The message line, in the command line's words.
    static func message(_ e: CofferError) -> String { words(e).message }

    /// The hint line, in the command line's words, if there is one.
    static func hint(_ e: CofferError) -> String? { words(e).hint }

    static func words(_ e: CofferError) -> (message: String, hint: String?) {
        var message = e.message
        var hint = e.hint
        if let r = e.remedy, let worded = words(for: r, message: message) {
            (message, hint) = worded
        }
        if let argument = e.argument, let phrases = argumentPhrases[argument] {
            for (neutral, option) in phrases {
                message = message.replacingOccurrences(of: neutral, with: option)
                hint = hint?.replacingOccurrences(of: neutral, with: option)
            }
        }
        return (message, hint)
    }

    /// How CofferKit names an argument of a call in its messages and
    /// hints, and the option of the command line that gives it.
    static let argumentPhrases: [String: [(neutral: String, option: String)]] = [
        "length": [("the length", "--length"), ("a longer length or fewer character classes", "a longer --length or fewer --chars")],
        "classes": [("the character class list", "--chars")],
        "count": [("the word count", "--words")],
        "separator": [("the separator", "--separator")],
        "field": [("say which field", "say which with --field")],
        "keep": [("settled by keeping side N", "settled with --keep N"), ("side number ", "--keep ")],
    ]

    /// The message and hint for remedy `r` of an error whose message is
    /// `message`; nil to keep CofferKit's words.
    static func words(for r: CofferError.Remedy, message: String) -> (message: String, hint: String?)? {
        let item = r.item ?? "NAME"
        let field = r.field ?? "FIELD"
        let path = r.path ?? "PATH"
        let name = r.name ?? "NAME"
        func hint(_ text: String) -> (message: String, hint: String?) { (message, text) }
        switch r.action {
        // Items
        case .listItems: return hint("list items with `coffer ls`")
        case .addressByID: return hint("address one as \(name), then rename it with `coffer edit id:… --rename NEW` or remove it")
        case .chooseAnotherName: return hint("choose another name, or change it with `coffer edit`")
        case .sayWhatToChange: return hint("see `coffer edit --help`")
        case .addField: return hint("add one with `coffer edit \(item) --field KEY=VALUE`")
        case .editFieldDirectly: return hint("change it with `coffer edit \(item) --secret \(field)`")
        case .replaceAttachment: return hint("replace it with `coffer attach \(item) FILE --as \(name)`")
        case .endPrefixesWithSlash: return hint("e.g. `coffer mv work/ old-work/`")
        // Programs' environment
        case .renameVariable:
            return hint("name one of them with `coffer edit \(item) --env-var \(field)=OTHER_NAME` (or =- to leave it out), or select fewer items")
        case .allowVariableName:
            // One line: what is wrong and the opt-in.
            return (
                "\(message); if you mean it, allow it for this item with `coffer edit \(item) --allow-env-var \(name)` (or --allow-dangerous-names for this run), else rename it with --env-var \(field)=OTHER_NAME",
                nil
            )
        // Requirements
        case .checkManifestPath: return hint("check the --requirements path")
        case .nameManifest: return hint("pass --name NAME")
        case .listManifests: return hint("list them with `coffer requirements ls`")
        case .checkValueOrForce: return hint("check what you pasted; to store it anyway, add --force")
        case .checkValue: return hint("check the value; the rule is in the registered manifest (`coffer requirements`)")
        // Unlocking and sessions
        case .givePassphrase:
            return hint("unlock a session (eval \"$(coffer unlock)\"), or give the passphrase through a file descriptor, a file or COFFER_PASSPHRASE")
        case .unlockAgain:
            // Every unusable session is one line that ends with the way out.
            let rotated = message.replacingOccurrences(of: " was rotated (key epoch ", with: " was rotated (`coffer rekey`, key epoch ")
            return ("\(rotated); run eval \"$(coffer unlock\(r.path.map { " --vault \($0)" } ?? ""))\"", nil)
        case .importWithPassphrase:
            return hint(
                "run `coffer import` or `coffer sync` with the passphrase (terminal, --passphrase-fd, --passphrase-file or COFFER_PASSPHRASE), not a session")
        // The vault file
        case .createVault: return hint("create one with `coffer init`, or pass --vault PATH")
        case .checkVaultPath: return hint("check the --vault path")
        case .useExistingVault: return hint("use it as it is, or choose another path with --vault PATH")
        case .chooseAnotherVaultPath: return hint("choose another --vault path")
        case .importIntoExistingVault: return hint("choose another --vault path, or import the bundle into that vault with `coffer import`")
        case .checkPermissions: return hint("check the owner and mode of the file and its folders (ls -l), or pass --vault PATH")
        case .verifyVault: return hint("run `coffer verify` for details; restore the vault from a backup or clone it again from a bundle")
        case .restoreVault: return hint("restore the vault from a backup, or clone it again from another machine's bundle (`coffer clone`)")
        // Bundles, sync and replicas
        case .giveBundle: return hint("give the path of a bundle written by `coffer export`")
        case .giveBundleOrStandardInput: return hint("give the path of a bundle written by `coffer export` (or `-` for standard input)")
        case .giveSyncFolder: return hint("give the folder that holds the bundles, not a bundle; `coffer import FILE` merges one file")
        case .cloneOrUseAnotherFolder:
            return hint(
                "to make this machine a replica of that vault, move \(r.vaultPath ?? "the vault") aside and run `coffer clone \(path)`; to sync this vault, use another folder"
            )
        case .restoreNewerFiles:
            return hint(
                "nothing of it was imported; put that member's newer files back (a git remote reset to an older commit: push the newer commit again), or have that member run `coffer sync` again"
            )
        case .importIntoReplica: return hint("import bundles only into replicas of the vault that wrote them; `coffer clone` makes a new replica from a bundle")
        case .importEarlierBundles: return hint("import the bundles it depends on first, or ask for a full bundle (`coffer export` without --since)")
        case .exportFullBundle: return hint("on the exporting machine run `coffer export --out FILE` without --since")
        case .writeSummary: return hint("write one with `coffer summary --out FILE` on the receiving machine")
        case .writeSummaryAgain: return hint("write it again with `coffer summary --out FILE` on the receiving machine")
        case .allowExpensiveKDF: return hint("if you made the vault with these parameters, run `coffer clone --allow-expensive-kdf`")
        case .adoptKey: return hint("if that rekey was yours, run `coffer sync --adopt-key DIR` to adopt it; if not, remove the file")
        case .adoptKeyWithoutDryRun:
            return hint(
                "a dry run cannot show its changes before the new key is adopted; run the import without --dry-run to adopt it (the passphrase is asked once)")
        case .adoptNewerEpochFirst:
            return hint(
                "the replica that wrote it must first import a bundle of epoch \(name) (`coffer sync` or `coffer import`): it adopts the new key and writes its edits again under it"
            )
        case .cloneSyncRepository: return hint("clone your sync repository first (git clone URL \(path)), or sync without --git")
        case .addGitRemote: return hint("add it with `git -C \(path) remote add \(name) URL`, or name another with --remote")
        case .syncAgain: return hint("run `coffer sync \(path) --git` again; the vault and its bundle are committed locally")
        case .waitForOtherSync: return ("another `coffer sync --git` is running in this repository", r.text)
        // Shared vaults
        case .nameMember: return hint("give a name such as alice or ci-deploy (letters, digits, '.', '_', '-', '@')")
        case .checkPublicIdentity: return hint("copy the whole coffer1… line that `coffer identity new` printed for that member")
        case .createIdentity: return hint("make one with `coffer identity new --out FILE`")
        case .listMembers: return hint("list the members with `coffer members ls`")
        case .chooseAnotherMember: return hint("one identity is one member: remove the other name with `coffer members rm`, or give another identity")
        case .keepIdentity: return hint("keep it (`coffer identity show` prints it); to make another, write it to a file with `coffer identity new --out FILE`")
        case .chooseAnotherIdentityPath: return hint("choose another --out path; an identity file is never overwritten")
        case .askToBeAdded:
            return hint(
                "give a member your public identity (`coffer identity show --identity FILE`) to add with `coffer members add`, then clone or sync from their next bundle"
            )
        case .unlockWithClonedIdentity: return hint("unlock it with its passphrase, or give --identity the identity file this replica was cloned with")
        // Conflicts
        case .listConflicts: return hint("list conflicts with `coffer conflicts`")
        case .seeConflictSides: return hint("see the sides with `coffer conflicts`")
        case .chooseAnotherNameForConflict: return hint("choose another name with --value")
        default: return nil
        }
    }
}
