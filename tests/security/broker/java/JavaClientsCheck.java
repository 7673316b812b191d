// Kafka's own Java clients (kafka-clients 4.4.0 from tests/reference) against our broker over
// SASL_SSL: the Admin API creates a SCRAM user and ACLs, then a producer and a consumer log in
// as that user and round-trip a record. Prints one "ok ..." line per step; any failure throws.
//
//   java -cp '.reference/kafka-libs/*' JavaClientsCheck.java SASL_SSL_BOOTSTRAP CA_PEM ADMIN_USER
//       ADMIN_PW SSL_BOOTSTRAP CLIENT_KEYSTORE_PEM
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClientsCheck {
    static Properties props(String bootstrap, String ca, String mechanism, String module,
                            String user, String password) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_SSL");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", ca);
        p.put("sasl.mechanism", mechanism);
        p.put("sasl.jaas.config", "org.apache.kafka.common.security." + module + " required "
              + "username=\"" + user + "\" password=\"" + password + "\";");
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], ca = args[1], adminUser = args[2], adminPassword = args[3];
        mutualTls(args[4], ca, args[5]);
        String user = "java-user", password = "java-user-secret", topic = "java-topic";
        Properties adminProps = props(bootstrap, ca, "PLAIN", "plain.PlainLoginModule",
                                      adminUser, adminPassword);
        try (Admin admin = Admin.create(adminProps)) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
                user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), password)))
                .all().get();
            var described = admin.describeUserScramCredentials(List.of(user)).all().get();
            System.out.println("ok scram " + described.get(user).credentialInfos());
            String principal = "User:" + user;
            admin.createAcls(List.of(
                new AclBinding(new ResourcePattern(ResourceType.TOPIC, "java-", PatternType.PREFIXED),
                    new AccessControlEntry(principal, "*", AclOperation.ALL, AclPermissionType.ALLOW)),
                new AclBinding(new ResourcePattern(ResourceType.GROUP, "java-", PatternType.PREFIXED),
                    new AccessControlEntry(principal, "*", AclOperation.READ, AclPermissionType.ALLOW))))
                .all().get();
            var acls = admin.describeAcls(AclBindingFilter.ANY).values().get();
            System.out.println("ok acls " + acls.size());
        }
        Properties producerProps = props(bootstrap, ca, "SCRAM-SHA-256",
                                         "scram.ScramLoginModule", user, password);
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            producer.send(new ProducerRecord<>(topic, "k", "from-java")).get();
        }
        System.out.println("ok produced");
        Properties consumerProps = props(bootstrap, ca, "SCRAM-SHA-256",
                                         "scram.ScramLoginModule", user, password);
        consumerProps.put("group.id", "java-group");
        consumerProps.put("auto.offset.reset", "earliest");
        consumerProps.put("key.deserializer", StringDeserializer.class.getName());
        consumerProps.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                    if (record.value().equals("from-java")) {
                        consumer.commitSync();
                        System.out.println("ok consumed");
                        return;
                    }
                }
            }
        }
        throw new IllegalStateException("the record was not read back within 30 s");
    }

    // Mutual TLS: a PEM keystore (key + chain in one file) as the client's certificate.
    static void mutualTls(String bootstrap, String ca, String keystore) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SSL");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", ca);
        p.put("ssl.keystore.type", "PEM");
        p.put("ssl.keystore.location", keystore);
        try (Admin admin = Admin.create(p)) {
            System.out.println("ok mtls nodes=" + admin.describeCluster().nodes().get().size());
        }
    }
}
