// Commits, aborts and commits again a kafkajs transaction against the
// broker at argv[2] on topic argv[3], then reads the topic with a
// read_committed consumer until it has three records and a second more,
// and prints what it read, comma-separated (test/kafkajs_txn_test.go).
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [broker, topic] = process.argv.slice(2);
  const kafka = new Kafka({ clientId: "kafkajs-txn", brokers: [broker], logLevel: logLevel.WARN });
  const producer = kafka.producer({ transactionalId: "kafkajs-txn", idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const send = async (values, commit) => {
    const txn = await producer.transaction();
    await txn.send({ topic, messages: values.map((value) => ({ value })) });
    await (commit ? txn.commit() : txn.abort());
  };
  await send(["c1", "c2"], true);
  await send(["a1"], false);
  await send(["c3"], true);
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: "kafkajs-txn-group", readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length === 3) setTimeout(done, 1000);
    },
  });
  const timeout = setTimeout(done, 20000);
  await finished;
  clearTimeout(timeout);
  await consumer.disconnect();
  console.log(got.join(","));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
