package proteus

import kotlinx.coroutines.test.runTest
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFalse
import kotlin.test.assertNull

/** Identity pinning: `ClientOptions(identityPinning = true)`, `pinnedIdentity`, `acceptIdentity`. */
class PinningTest {
    private suspend fun firstMessage(from: Client, to: Client): ByteArray {
        from.createSession("bob", to.generatePrekeys(1).single().bytes)
        return from.encrypt("bob", bytes("hello"))
    }

    @Test
    fun `a new identity under a pinned session id waits for acceptIdentity`() = runTest {
        val bob = Client.inMemory(ClientOptions(identityPinning = true))
        val alice = Client.inMemory()
        assertNull(bob.pinnedIdentity("alice"))
        assertEquals("hello", text(bob.decrypt("alice", firstMessage(alice, bob))))
        assertEquals(alice.fingerprint(), bob.pinnedIdentity("alice"))
        bob.deleteSession("alice")
        assertEquals(alice.fingerprint(), bob.pinnedIdentity("alice"))

        // Someone else under that id: refused, also in a batch, where it is the message's result.
        val other = Client.inMemory()
        val held = firstMessage(other, bob)
        expectError(204, ErrorKind.REMOTE_IDENTITY_CHANGED) { bob.decrypt("alice", held) }
        val collector = Collector()
        val summary = bob.decryptBatch(listOf(QueuedMessage("alice", held)), collector)
        assertEquals(1, summary.failed)
        val result = collector.results.single()
        assertEquals(204 to ErrorKind.REMOTE_IDENTITY_CHANGED, result.errorCode to result.errorKind)
        assertEquals(other.fingerprint(), result.sender)
        assertFalse(bob.hasSession("alice"))

        bob.acceptIdentity("alice", other.fingerprint())
        assertEquals(other.fingerprint(), bob.pinnedIdentity("alice"))
        val again = Collector()
        bob.decryptBatch(listOf(QueuedMessage("alice", held)), again)
        assertEquals("hello", text(again.results.single().plaintext))
        assertEquals(result.messageId, again.results.single().messageId)
    }

    @Test
    fun `forgetSession deletes the session and its pin, and the id is pinned anew`() = runTest {
        val bob = Client.inMemory(ClientOptions(identityPinning = true))
        val alice = Client.inMemory()
        bob.decrypt("alice", firstMessage(alice, bob))
        bob.forgetSession("alice")
        assertFalse(bob.hasSession("alice"))
        assertNull(bob.pinnedIdentity("alice"))
        val carol = Client.inMemory()
        assertEquals("hello", text(bob.decrypt("alice", firstMessage(carol, bob))))
        assertEquals(carol.fingerprint(), bob.pinnedIdentity("alice"))
        bob.forgetSession("nobody")
        expectError(106, ErrorKind.INVALID_SESSION_ID) { bob.forgetSession("") }
    }

    @Test
    fun `a bundle of another identity is refused and bad input is a typed error`() = runTest {
        val bob = Client.inMemory(ClientOptions(identityPinning = true))
        val alice = Client.inMemory()
        val other = Client.inMemory()
        bob.createSession("alice", alice.generatePrekeys(1).single().bytes)
        val bundle = other.generatePrekeys(1).single().bytes
        expectError(204, ErrorKind.REMOTE_IDENTITY_CHANGED) { bob.resetSession("alice", bundle) }
        assertEquals(alice.fingerprint(), bob.remoteFingerprint("alice"))
        bob.acceptIdentity("alice", other.fingerprint())
        assertFalse(bob.hasSession("alice"))
        bob.createSession("alice", bundle)
        assertEquals(other.fingerprint(), bob.remoteFingerprint("alice"))

        expectError(411, ErrorKind.INVALID_FINGERPRINT) { bob.acceptIdentity("alice", "abc") }
        expectError(411, ErrorKind.INVALID_FINGERPRINT) { bob.acceptIdentity("alice", "z".repeat(64)) }
        expectError(106, ErrorKind.INVALID_SESSION_ID) { bob.acceptIdentity("", other.fingerprint()) }
        expectError(106, ErrorKind.INVALID_SESSION_ID) { bob.pinnedIdentity("") }
    }

    @Test
    fun `without the option nothing is pinned and a pin survives reopening`() = runTest {
        val plain = Client.inMemory()
        val alice = Client.inMemory()
        plain.decrypt("alice", firstMessage(alice, plain))
        assertNull(plain.pinnedIdentity("alice"))

        val path = tempStore().toString()
        val options = ClientOptions(identityPinning = true)
        val carol = Client.inMemory()
        val bob = Client.open(path, options = options)
        bob.createSession("carol", carol.generatePrekeys(1).single().bytes)
        bob.deleteSession("carol")
        bob.close()
        val reopened = Client.open(path, options = options)
        assertEquals(carol.fingerprint(), reopened.pinnedIdentity("carol"))
        val other = Client.inMemory()
        expectError(204, ErrorKind.REMOTE_IDENTITY_CHANGED) {
            reopened.createSession("carol", other.generatePrekeys(1).single().bytes)
        }
        reopened.close()
    }
}
