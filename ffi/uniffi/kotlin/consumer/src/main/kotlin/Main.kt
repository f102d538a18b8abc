import kotlinx.coroutines.runBlocking
import proteus.BatchResult
import proteus.Client
import proteus.QueuedMessage
import proteus.decryptBatch

/** A consumer of the JVM package: two in-memory clients, a session, a fan-out and a batch. */
fun main() = runBlocking {
    val alice = Client.inMemory()
    val bob = Client.inMemory()
    alice.createSession("bob", bob.generatePrekeys(1).single().bytes)
    val envelope = alice.encryptFor(listOf("bob"), "hello from a consumer".toByteArray()).single().envelope!!
    val received = mutableListOf<BatchResult>()
    bob.decryptBatch(listOf(QueuedMessage("alice", envelope))) { results, _ ->
        received += results
        true
    }
    val text = received.single().plaintext?.let { String(it) }
    check(text == "hello from a consumer") { "got $text" }
    check(received.single().sender == alice.fingerprint())
    alice.close()
    bob.close()
    println("consumer ok")
}
