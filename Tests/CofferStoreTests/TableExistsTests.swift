import CofferStore
import GRDB
import Testing

@Suite("CofferStore: Queries.tableExists answers as GRDB's tableExists does")
struct TableExistsTests {
    @Test func sameAnswersAsGRDB() throws {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE keyEpoch (singleton INTEGER PRIMARY KEY, epoch BLOB);
                    CREATE INDEX keyEpochIndex ON keyEpoch (epoch);
                    CREATE VIEW keyView AS SELECT * FROM keyEpoch;
                    """)
        }
        try queue.read { db in
            for name in ["keyEpoch", "KEYEPOCH", "keyepoch", "keyWrapping", "keyEpochIndex", "keyView", "", "keyEpoch'--"] {
                let ours = try Queries.tableExists(db, name)
                #expect(ours == (try db.tableExists(name)), "\(name)")
            }
            #expect(try Queries.tableExists(db, "keyEpoch"))
            #expect(try !Queries.tableExists(db, "keyWrapping"))
            #expect(try !Queries.tableExists(db, "keyView"))
        }
    }
}
