// Ready asks a Kafka broker for its metadata (the list of topics) and exits
// 0 when it answers, 1 with the client's error when it does not within the
// given time. tools/kafka/kafka.sh runs it as a single-file source program
// (java -cp 'libs/*' Ready.java host:port seconds) once the broker's log
// says it started.
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class Ready {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        int seconds = Integer.parseInt(args[1]);
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, seconds * 1000);
        try (Admin admin = Admin.create(p)) {
            int n = admin.listTopics().names().get(seconds, TimeUnit.SECONDS).size();
            System.out.println("kafka: " + bootstrap + " answers metadata (" + n + " topics)");
        } catch (Exception e) {
            System.err.println("kafka: " + bootstrap + " did not answer metadata within " + seconds + " s: " + e);
            System.exit(1);
        }
    }
}
