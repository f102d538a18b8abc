// Two clients with a session each way started: alice made it from bob's prekey bundle and sent
// the first message, bob decrypted it.

export async function pair(Client, { alice, bob } = {}) {
  alice ??= await Client.inMemory();
  bob ??= await Client.inMemory();
  const [prekey] = await bob.generatePrekeys(1);
  await alice.createSession('bob', prekey.bundle);
  const hello = await alice.encrypt('bob', 'hello');
  await bob.decrypt('alice', hello);
  return { alice, bob };
}

export const text = (bytes) => new TextDecoder().decode(bytes);
