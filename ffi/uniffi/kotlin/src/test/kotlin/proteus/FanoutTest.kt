package proteus

import java.security.KeyFactory
import java.security.Signature
import java.security.spec.X509EncodedKeySpec
import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertContentEquals
import kotlin.test.assertEquals
import kotlin.test.assertNull
import kotlin.test.assertTrue

/** encryptFor (one plaintext to many sessions), identityKey and prekeyMessageFingerprint. */
class FanoutTest {
    @Test
    fun `one plaintext to many sessions, a missing one is a result`() = runTest {
        val alice = Client.inMemory()
        val peers = (0 until 5).map { Client.inMemory() }
        peers.forEachIndexed { i, p -> alice.createSession("peer:$i", p.generatePrekeys(1).single().bytes) }
        val ids = listOf("peer:0", "peer:1", "nobody", "peer:2", "peer:3", "peer:4", "peer:0", "")
        val results = alice.encryptFor(ids, bytes("to the group"))
        assertEquals(ids, results.map { it.sessionId })
        assertEquals(104, (results[2].error as ProteusException.Engine).code)
        assertEquals(ErrorKind.INVALID_SESSION_ID, results[7].error?.kind)
        assertNull(results[2].envelope)
        // An id listed twice gets two envelopes, both decryptable in order.
        for ((i, r) in results.withIndex().filter { it.value.error == null }) {
            val peer = peers[r.sessionId.removePrefix("peer:").toInt()]
            assertEquals("to the group", text(peer.decrypt("alice", r.envelope!!)), "result $i")
        }
        assertEquals(results[0], results[0].copy(envelope = results[0].envelope!!.copyOf()))
    }

    @Test
    fun `the fan-out is committed before it returns`() = runTest {
        val path = tempStore().toString()
        val peers = (0 until 3).map { Client.inMemory() }
        val first = Client.open(path).use { alice ->
            peers.forEachIndexed { i, p -> alice.createSession("peer:$i", p.generatePrekeys(1).single().bytes) }
            alice.encryptFor(peers.indices.map { "peer:$it" }, bytes("one"))
        }
        Client.open(path).use { alice ->
            val second = alice.encryptFor(peers.indices.map { "peer:$it" }, bytes("two"))
            peers.forEachIndexed { i, p ->
                assertEquals("one", text(p.decrypt("alice", first[i].envelope!!)))
                assertEquals("two", text(p.decrypt("alice", second[i].envelope!!)))
            }
        }
    }

    @Test
    fun `identityKey is the fingerprint's key and verifies signatures`() = runTest {
        val client = Client.inMemory()
        val key = client.identityKey()
        assertEquals(32, key.size)
        assertEquals(client.fingerprint(), key.joinToString("") { "%02x".format(it) })
        val x509 = byteArrayOf(0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00) + key
        val verifier = Signature.getInstance("Ed25519").apply {
            initVerify(KeyFactory.getInstance("Ed25519").generatePublic(X509EncodedKeySpec(x509)))
            update(bytes("example.com login: nonce 42"))
        }
        assertTrue(verifier.verify(client.sign(bytes("example.com login: nonce 42"))))
    }

    @Test
    fun `prekeyMessageFingerprint names the sender of a first message only`() = runTest {
        val (alice, bob) = pair()
        val first = alice.encrypt("bob", bytes("hi"))
        assertEquals(alice.fingerprint(), prekeyMessageFingerprint(first))
        bob.decrypt("alice", first)
        val reply = bob.encrypt("alice", bytes("hello"))
        assertNull(prekeyMessageFingerprint(reply))
        val e = kotlin.test.assertFailsWith<ProteusException.Decode> { prekeyMessageFingerprint(byteArrayOf(1, 2)) }
        assertEquals(3, e.code / 100)
        assertContentEquals(bytes("hello"), alice.decrypt("bob", reply))
    }
}
