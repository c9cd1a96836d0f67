// Produces three records over SASL_SSL with SCRAM-SHA-512 to the broker at
// argv[2] on topic argv[3], trusting the CA in argv[4], as user argv[5]
// with password argv[6], reads them back and prints them comma-separated
// (test/security_test.go).
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

async function main() {
  const [broker, topic, ca, username, password] = process.argv.slice(2);
  const kafka = new Kafka({
    clientId: "kafkajs-scram",
    brokers: [broker],
    logLevel: logLevel.WARN,
    ssl: { ca: [fs.readFileSync(ca, "utf-8")] },
    sasl: { mechanism: "scram-sha-512", username, password },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: ["s1", "s2", "s3"].map((value) => ({ value })) });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: "kafkajs-scram-group" });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length === 3) done();
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
