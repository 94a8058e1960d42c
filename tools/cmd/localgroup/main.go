// Command localgroup runs a whole broker group on this machine as processes
// on loopback: Consul, NATS, namesrv, a SYNC_MASTER master, a slave and
// metasync, with their data under one folder. It prints the addresses, keeps
// running until Ctrl-C (SIGINT) or SIGTERM, then stops every process it
// started, newest first, and exits.
//
// The brokers authenticate each other on the HA link with a random secret made on the first
// run (DATA/ha.secret, mode 0600, next to DATA/registration.secret for authenticated
// registration) and reused on every later run; the brokers read it with haSecretFile.
//
// It is what `make run` starts. Services whose binary is not in -bin are
// skipped with a line saying so. With -failover (make run RUN_ARGS=-failover)
// the two brokers are a failover group instead: both start as slaves with
// enableFailover=true and the election in Consul promotes one.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rmqha/rmqha/tools/harness"
	"github.com/rmqha/rmqha/tools/secretfile"
)

type stopper interface {
	Stop(time.Duration) error
	Name() string
}

func main() {
	var (
		binDir   = flag.String("bin", "bin", "folder with the service binaries")
		dataDir  = flag.String("data", "run", "folder for data, configs and logs")
		namesrv  = flag.Int("namesrv-port", 9876, "namesrv remoting port")
		master   = flag.Int("master-port", 10911, "master remoting port (HA on +1)")
		slave    = flag.Int("slave-port", 10921, "slave remoting port")
		httpBase = flag.Int("http-base", 18080, "first HTTP status port (namesrv, master, slave, metasync)")
		verbose  = flag.Bool("v", false, "copy every process's output to this terminal")
		failover = flag.Bool("failover", false, "automatic failover: two nodes started as slaves (ports of -master-port and -slave-port), the election in Consul promotes one")
	)
	flag.Parse()
	if err := run(*binDir, *dataDir, *namesrv, *master, *slave, *httpBase, *verbose, *failover); err != nil {
		fmt.Fprintln(os.Stderr, "localgroup:", err)
		os.Exit(1)
	}
}

func run(binDir, dataDir string, namesrvPort, masterPort, slavePort, httpBase int, verbose, failover bool) error {
	dataDir, _ = filepath.Abs(dataDir)
	binDir, _ = filepath.Abs(binDir)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	// Per-install secrets: made once, reused on every later run, never printed.
	haSecret, regSecret, err := secretfile.EnsureInstall(dataDir)
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	var out io.Writer // nil unless -v: a typed nil would not be an empty io.Writer
	if verbose {
		out = os.Stdout
	}
	var started []stopper
	stopAll := func() {
		for i := len(started) - 1; i >= 0; i-- {
			s := started[i]
			if err := s.Stop(15 * time.Second); err != nil {
				fmt.Printf("stopped %-9s (%v)\n", s.Name(), err)
			} else {
				fmt.Printf("stopped %-9s\n", s.Name())
			}
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)

	fail := func(err error) error { stopAll(); return err }

	fmt.Printf("secrets   %s (haSecretFile of the brokers), %s (registrationSecretFile of the name server and the brokers)\n", haSecret, regSecret)
	consul, err := harness.StartConsul(filepath.Join(dataDir, "consul"), out)
	if err != nil {
		return fail(fmt.Errorf("consul: %w", err))
	}
	started = append(started, consul)
	fmt.Printf("consul    http://%s\n", consul.HTTPAddr())

	natsProc, natsPort, err := harness.StartNATSProcess(filepath.Join(dataDir, "nats"), 0, out)
	if err != nil {
		return fail(fmt.Errorf("nats: %w", err))
	}
	started = append(started, natsProc)
	natsURL := "nats://" + harness.Addr(natsPort)
	fmt.Printf("nats      %s\n", natsURL)

	env := []string{"CONSUL_HTTP_ADDR=" + consul.HTTPAddr(), "NATS_URL=" + natsURL}
	nsAddr := harness.Addr(namesrvPort)
	type service struct{ name, conf, ready, show string }
	services := []service{
		{"namesrv", fmt.Sprintf("listenPort=%d\nhttpPort=%d\nregistrationSecretFile=%s\n", namesrvPort, httpBase, regSecret), nsAddr, "namesrv   " + nsAddr},
		{"master", brokerConf(dataDir, haSecret, "master", 0, "SYNC_MASTER", masterPort, nsAddr, httpBase+1, ""),
			harness.Addr(masterPort), fmt.Sprintf("master    %s (HA %s, SYNC_MASTER)", harness.Addr(masterPort), harness.Addr(masterPort+1))},
		{"slave", brokerConf(dataDir, haSecret, "slave", 1, "SLAVE", slavePort, nsAddr, httpBase+2, harness.Addr(masterPort+1)) +
			fmt.Sprintf("metasyncAddrs=%s\n", harness.Addr(httpBase+3)),
			harness.Addr(slavePort), fmt.Sprintf("slave     %s (replicates from %s)", harness.Addr(slavePort), harness.Addr(masterPort+1))},
		{"metasync", fmt.Sprintf("namesrvAddr=%s\nhttpPort=%d\nstorePathRootDir=%s\n", nsAddr, httpBase+3, filepath.Join(dataDir, "metasync", "store")),
			harness.Addr(httpBase + 3), fmt.Sprintf("metasync  status http://%s/status", harness.Addr(httpBase+3))},
	}
	if failover {
		// Both nodes run the slave binary; the election makes one of them master.
		msync := fmt.Sprintf("metasyncAddrs=%s\nenableFailover=true\n", harness.Addr(httpBase+3))
		services[1] = service{"node1", brokerConf(dataDir, haSecret, "node1", 1, "SLAVE", masterPort, nsAddr, httpBase+1, "") + msync,
			harness.Addr(masterPort), fmt.Sprintf("node1     %s (HA %s, automatic failover)", harness.Addr(masterPort), harness.Addr(masterPort+1))}
		services[2] = service{"node2", brokerConf(dataDir, haSecret, "node2", 2, "SLAVE", slavePort, nsAddr, httpBase+2, "") + msync,
			harness.Addr(slavePort), fmt.Sprintf("node2     %s (HA %s, automatic failover)", harness.Addr(slavePort), harness.Addr(slavePort+1))}
	}
	for i := 1; i <= 2; i++ { // the brokers sign their registrations with the same secret
		services[i].conf += fmt.Sprintf("registrationSecretFile=%s\n", regSecret)
	}
	for _, s := range services {
		binName := s.name
		if strings.HasPrefix(binName, "node") {
			binName = "slave"
		}
		bin := filepath.Join(binDir, binName)
		if _, err := os.Stat(bin); err != nil {
			fmt.Printf("skipped   %s (no binary %s yet)\n", s.name, bin)
			continue
		}
		dir := filepath.Join(dataDir, s.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(err)
		}
		conf := filepath.Join(dir, s.name+".conf")
		if err := os.WriteFile(conf, []byte(s.conf), 0o644); err != nil {
			return fail(err)
		}
		p, err := harness.StartProcess(harness.ProcessConfig{Name: s.name, Bin: bin, Args: []string{"-c", conf}, Env: env, Dir: dir, Stdout: out})
		if err != nil {
			return fail(err)
		}
		started = append(started, p)
		if err := harness.WaitFor(30*time.Second, func() error {
			if !p.Running() {
				return fmt.Errorf("%s exited: %v (log %s)", s.name, p.ExitErr(), p.LogPath())
			}
			return harness.DialOK(s.ready)
		}); err != nil {
			fmt.Println(p.LogTail(2048))
			return fail(err)
		}
		fmt.Println(s.show)
	}
	if failover {
		m, err := waitElected(httpBase+1, httpBase+2)
		if err != nil {
			return fail(err)
		}
		fmt.Printf("master    %s (elected; /status shows \"failover\"; kill it and the other node takes over)\n", m)
	}
	fmt.Printf(`
The group is up. Data, configs and logs are under %s.
Point a RocketMQ client at the name server %s, for example with the bench tool:
    bin/bench -namesrv %s -registrationSecretFile %s -topic TopicTest -n 10000
Admin writes (mqadmin updateTopic, updateBrokerConfig, resetOffsetByTime, ...) are signed with
    bin/mqadmin ... -registrationSecretFile %s
Press Ctrl-C to stop everything.
`, dataDir, nsAddr, nsAddr, regSecret, regSecret)
	<-sigs
	fmt.Println("\nstopping...")
	stopAll()
	return nil
}

func brokerConf(dataDir, haSecretFile, name string, id int, role string, port int, namesrv string, httpPort int, haMaster string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=%d\nbrokerRole=%s\n", id, role)
	fmt.Fprintf(&b, "listenPort=%d\nhaListenPort=%d\nnamesrvAddr=%s\nbrokerIP1=127.0.0.1\nbrokerIP2=127.0.0.1\n", port, port+1, namesrv)
	fmt.Fprintf(&b, "storePathRootDir=%s\nflushDiskType=ASYNC_FLUSH\nslaveReadEnable=true\nhttpPort=%d\n", filepath.Join(dataDir, name, "store"), httpPort)
	fmt.Fprintf(&b, "haSecretFile=%s\n", haSecretFile)
	if haMaster != "" {
		fmt.Fprintf(&b, "haMasterAddress=%s\n", haMaster)
	}
	return b.String()
}

// installSecret returns path, first writing a new random secret there (mode 0600) when the
// file does not exist: one secret per install, kept across runs, never a constant of the
// repository.
// waitElected waits until one of the failover nodes (status ports a and b) serves as master and
// returns its client address.
func waitElected(a, b int) (string, error) {
	var addr string
	err := harness.WaitFor(60*time.Second, func() error {
		for _, port := range []int{a, b} {
			var st struct {
				Role           string `json:"role"`
				AdvertisedAddr string `json:"advertisedAddr"`
				WritesFenced   bool   `json:"writesFenced"`
			}
			c := http.Client{Timeout: 2 * time.Second}
			resp, err := c.Get("http://" + harness.Addr(port) + "/status")
			if err != nil {
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Role != "SLAVE" && !st.WritesFenced {
				addr = st.AdvertisedAddr
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
		return fmt.Errorf("no master elected yet")
	})
	return addr, err
}
