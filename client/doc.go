// Package client is sexton's Go client library: what the CLI, the benches,
// the integration tests and any other Go program use to store, read and
// delete objects.
//
// A Client follows the Raft leader (transport.ClusterClient) and carries a
// session: a random client id and a sequence number on every mutating
// request (api.Session). A mutation is retried with the same sequence
// number after any failure, so a retry can never act twice — a retried
// Remove can never delete a newer object that another client put in the
// meantime (docs/DESIGN.md invariant 10). When the client gives up without
// knowing whether a mutation ran, the error is OUTCOME_UNKNOWN, never a
// plain "not done".
//
// Put writes the value to the holders the leader chose, each write carrying
// the leader's write grant; a holder that fails the write is excluded and
// the put is placed again, so one holder crash costs no failed put. A put
// of LOCAL_DISK replicas only is granted without a commit (PutGrant) and
// acknowledged by its one Raft commit (PutCommit, docs/DESIGN.md §8); a
// put with a DFS replica starts and ends with a commit each (PutStart,
// PutEnd), and its failed first attempt is revoked. Get reads from a replica and, when the replica
// no longer has that incarnation (an overwrite or remove raced the read),
// asks the master again instead of reporting the key absent.
//
// PutBatch and GetBatch do the same for many keys with one master round
// trip per phase (BatchPutStart/BatchPutEnd, BatchGet) and the holder calls
// issued concurrently, pipelined on the one connection per holder; each
// key has its own result. GetInto and GetBatchInto decode the holder's
// answer into the caller's buffer; Exist asks about many keys at once.
// PutFrom writes a value split across the caller's slices without joining
// them, and GetIntoRanges reads byte ranges of a value into the caller's
// slices. PutIfAbsent and PutBatchIfAbsent are Mooncake's put,
// insert-if-absent: a put of a key that exists or is being put waits for
// it to exist and succeeds, so many writers racing on a key all succeed.
// PutOptions.Prefer asks the masters to place a put's first replica on a
// named segment, holder or host, and Config.ReadPrefer makes reads try
// the replicas it names first: a program on a holder's machine keeps its
// bytes local, as Mooncake's preferred_segment does. WithPutTrace
// reports a put's master round trips and holder writes as they end
// (sexton bench put).
//
// The client knows nothing of Raft or the fsm.
package client
