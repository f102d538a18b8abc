import Foundation
import XCTest
@testable import Proteus

/// The public surface of Client against ffi/api-surface.json, the list every binding shares: a
/// method added to (or missing from) the Swift binding and not the others fails here.
///
/// Swift has no runtime reflection of methods, so the surface is read from the package's
/// sources (the generated Proteus.swift and the hand-written extensions), and the calls below
/// check at compile time that each listed method is really there with its shape.
final class ApiSurfaceTests: XCTestCase {
    private let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    private func source(_ name: String) throws -> String {
        try String(contentsOf: here.appendingPathComponent("../../Sources/Proteus/\(name)"), encoding: .utf8)
    }

    private func names(_ pattern: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).map {
            String(text[Range($0.range(at: 1), in: text)!]).replacingOccurrences(of: "`", with: "")
        }
    }

    /// Generated plumbing that is not part of the shared surface (as api-surface.json says).
    private let plumbing: Set<String> = ["errorCodes", "clientSealStore", "clientRekeyStore", "clientDeleteStore"]

    func testTheClientSurfaceIsTheSharedList() throws {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: here.appendingPathComponent("../../../../api-surface.json"))) as! [String: Any]
        let client = json["client"] as! [String: [String]]
        let generated = try source("Proteus.swift")
        let start = generated.range(of: "open class Client:")!.lowerBound
        let end = generated.range(of: "public struct FfiConverterTypeClient:")!.lowerBound
        let clientSource = String(generated[start..<end])
        let extensions = try source("Client+Stores.swift")

        let constructors = Set(names(#"^public static func (`?\w+`?)\("#, in: clientSource))
        let statics = Set(names(#"^    public static func (\w+)\("#, in: extensions))
        let methods = Set(names(#"^open func (\w+)\("#, in: clientSource) + names(#"^    public func (\w+)\("#, in: extensions))
        let functions = Set(names(#"^public func (\w+)\("#, in: String(generated[end...])))
            .filter { !$0.hasPrefix("FfiConverter") && !$0.hasPrefix("uniffi") && !plumbing.contains($0) && $0 != "hash" }

        XCTAssertEqual(constructors, Set(client["constructors"]!))
        XCTAssertEqual(statics, Set(client["static"]!))
        XCTAssertEqual(methods, Set(client["methods"]!))
        XCTAssertEqual(functions, Set(json["functions"] as! [String]))
    }

    /// Each entry of the list, referenced with its Swift shape: this file does not compile if
    /// one is missing or changed.
    func testEveryListedCallExistsWithItsShape() {
        let _: (String, Data?, OpenMode?, ClientOptions, CommitCounter?) async throws -> Client = Client.open
        let _: (ClientOptions) async throws -> Client = Client.inMemory
        let _: (String) async throws -> Void = Client.deleteStore
        let _: (String, Data) async throws -> Void = Client.sealStore
        let _: (String, Data, Data) async throws -> Void = Client.rekeyStore
        let _: (Client) -> () async throws -> String = Client.fingerprint
        let _: (Client) -> () async throws -> Data = Client.identityKey
        let _: (Client) -> (Data) async throws -> Data = Client.sign
        let _: (Client) -> (Int32) async throws -> Void = Client.setMaxCounterGap
        let _: (Client) -> (Int32) async throws -> [PreKeyBundle] = Client.generatePrekeys
        let _: (Client) -> (Int32) async throws -> [PreKeyBundle] = Client.topUpPrekeys
        let _: (Client) -> () async throws -> PreKeyBundle = Client.lastResortBundle
        let _: (Client) -> (Int32) async throws -> PreKeyBundle = Client.prekeyBundle
        let _: (Client) -> () async throws -> Int32 = Client.prekeysRemaining
        let _: (Client) -> (String, Data) async throws -> Void = Client.createSession
        let _: (Client) -> (String, Data) async throws -> Bool = Client.resetSession
        let _: (Client) -> (String) async throws -> Bool = Client.hasSession
        let _: (Client) -> () async throws -> [String] = Client.sessionIds
        let _: (Client) -> (String) async throws -> String = Client.remoteFingerprint
        let _: (Client) -> (String) async throws -> Void = Client.deleteSession
        let _: (Client) -> (String) async throws -> Void = Client.forgetSession
        let _: (Client) -> (String) async throws -> String? = Client.pinnedIdentity
        let _: (Client) -> (String, String) async throws -> Void = Client.acceptIdentity
        let _: (Client) -> (String, Data) async throws -> Data = Client.encrypt
        let _: (Client) -> ([OutgoingMessage]) async throws -> [Data] = Client.encryptBatch
        let _: (Client) -> ([String], Data) async throws -> [FanoutResult] = Client.encryptFor
        let _: (Client) -> (String, Data) async throws -> Data = Client.decrypt
        let _: (Client) -> ([QueuedMessage], BatchDelivery, Int32, Int64) async throws -> BatchSummary = Client.decryptBatch
        let _: (Client) -> (Data) async throws -> Void = Client.importIdentity
        let _: (Client) -> (Data) async throws -> Int32 = Client.importPrekey
        let _: (Client) -> (String, Data) async throws -> Void = Client.importSession
        let _: (Client) -> (CryptoboxSource, Bool, ImportProgress?) async throws -> ImportReport = Client.importCryptobox
        let _: (Client) -> () async throws -> Data = Client.exportIdentity
        let _: (Client) -> (String) async throws -> Data = Client.exportSession
        let _: (Client) -> () async throws -> Void = Client.close
        let _: (Data) -> String = messageId
        let _: (Data) throws -> String? = prekeyMessageFingerprint
        let _: (Data) throws -> String = bundleFingerprint
        let _: (ProteusLogger, LogLevel) -> Void = setLogger
    }
}
