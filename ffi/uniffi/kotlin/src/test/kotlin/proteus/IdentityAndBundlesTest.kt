package proteus

import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertNotEquals
import kotlin.test.assertTrue

fun hex(s: String): ByteArray = ByteArray(s.length / 2) { s.substring(2 * it, 2 * it + 2).toInt(16).toByte() }

fun ByteArray.toHex(): String = joinToString("") { "%02x".format(it) }

/**
 * An identity key pair serialised as Wire's Proteus does (CBOR: version, secret = seed and public
 * key, public key), from an Ed25519 seed and its public key.
 */
fun identityBlob(seed: String, public: String): ByteArray =
    hex("a3" + "0001" + "01a1005840" + seed + public + "02a100a1005820" + public)

/** RFC 8032, section 7.1, TEST 1 and TEST 2: seed, public key, message, signature. */
val rfc8032 = listOf(
    listOf(
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155" +
            "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    listOf(
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da" +
            "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
)

class IdentityAndBundlesTest {
    /** Verifies with the JDK's own Ed25519 (Java 15+): the raw key wrapped in X.509 DER. */
    private fun jdkVerifies(fingerprint: String, message: ByteArray, signature: ByteArray): Boolean {
        val der = hex("302a300506032b6570032100" + fingerprint)
        val key = java.security.KeyFactory.getInstance("Ed25519")
            .generatePublic(java.security.spec.X509EncodedKeySpec(der))
        return java.security.Signature.getInstance("Ed25519").run {
            initVerify(key)
            update(message)
            verify(signature)
        }
    }

    @Test
    fun `sign makes an Ed25519 signature by the identity key that the JDK verifies`() = runTest {
        Client.inMemory().use { client ->
            Client.inMemory().use { other ->
                val message = bytes("relay-auth:v1:challenge 0123456789")
                val signature = client.sign(message)
                assertEquals(64, signature.size)
                assertTrue(jdkVerifies(client.fingerprint(), message, signature))
                // Not for another message, nor under another key; deterministic (RFC 8032).
                assertTrue(!jdkVerifies(client.fingerprint(), bytes("relay-auth:v1:challenge 0123456788"), signature))
                assertTrue(!jdkVerifies(other.fingerprint(), message, signature))
                assertContentEquals(signature, client.sign(message))
                assertTrue(jdkVerifies(client.fingerprint(), ByteArray(0), client.sign(ByteArray(0))))
            }
        }
    }

    @Test
    fun `signatures of an imported identity are those of RFC 8032`() = runTest {
        for ((seed, public, message, signature) in rfc8032) {
            Client.inMemory().use { client ->
                client.importIdentity(identityBlob(seed, public))
                assertEquals(public, client.fingerprint())
                assertEquals(signature, client.sign(hex(message)).toHex())
                assertTrue(jdkVerifies(public, hex(message), hex(signature)))
            }
        }
    }

    @Test
    fun `every client has its own identity and a hex fingerprint`() = runTest {
        Client.inMemory().use { a ->
            Client.inMemory().use { b ->
                val fp = a.fingerprint()
                assertTrue(Regex("[0-9a-f]{64}").matches(fp), fp)
                assertEquals(fp, a.fingerprint())
                assertNotEquals(fp, b.fingerprint())
            }
        }
    }

    @Test
    fun `generated prekeys have distinct ids and bundles name our identity`() = runTest {
        Client.inMemory().use { client ->
            assertEquals(0, client.prekeysRemaining())
            val bundles = client.generatePrekeys(5)
            assertEquals(5, bundles.map { it.id }.toSet().size)
            assertTrue(bundles.none { it.id == 65_535 })
            assertEquals(5, client.prekeysRemaining())
            for (bundle in bundles) {
                assertEquals(client.fingerprint(), bundleFingerprint(bundle.bytes))
                assertContentEquals(bundle.bytes, client.prekeyBundle(bundle.id).bytes)
            }
        }
    }

    @Test
    fun `the last resort bundle has id 65535 and is never used up`() = runTest {
        val alice = Client.inMemory()
        val bob = Client.inMemory()
        val lastResort = bob.lastResortBundle()
        assertEquals(65_535, lastResort.id)
        alice.createSession("bob", lastResort.bytes)
        assertEquals("hi", text(bob.decrypt("alice", alice.encrypt("bob", bytes("hi")))))
        assertContentEquals(lastResort.bytes, bob.lastResortBundle().bytes)
        alice.close()
        bob.close()
    }

    @Test
    fun `an exported identity imports into another client, its prekeys stay behind`() = runTest {
        val original = Client.inMemory()
        val bundle = original.generatePrekeys(1).single()
        val copy = Client.inMemory()
        copy.importIdentity(original.exportIdentity())
        assertEquals(original.fingerprint(), copy.fingerprint())
        // Prekeys are not part of the identity: only the original can accept this handshake.
        val alice = Client.inMemory()
        alice.createSession("original", bundle.bytes)
        val hello = alice.encrypt("original", bytes("hello"))
        expectError(101, ErrorKind.PRE_KEY_NOT_FOUND) { copy.decrypt("alice", hello) }
        assertEquals("hello", text(original.decrypt("alice", hello)))
        listOf(original, copy, alice).forEach { it.close() }
    }

    @Test
    fun `message ids are the hex of the envelope's MAC, and SHA-256 of other bytes`() = runTest {
        val (alice, _) = pair()
        val envelope = alice.encrypt("bob", bytes("x"))
        // a3 00 01 01 a1 00 58 20 <32-byte MAC> 02 <message>
        val mac = envelope.copyOfRange(8, 40).joinToString("") { "%02x".format(it) }
        assertEquals(mac, messageId(envelope))
        val notAnEnvelope = bytes("not an envelope")
        val sha256 = java.security.MessageDigest.getInstance("SHA-256").digest(notAnEnvelope)
            .joinToString("") { "%02x".format(it) }
        assertEquals(sha256, messageId(notAnEnvelope))
    }
}
