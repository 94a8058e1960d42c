module github.com/rmqha/rmqha/services/master

go 1.26.0

require github.com/rmqha/rmqha/libs/broker v0.0.0

require (
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fatih/color v1.16.0 // indirect
	github.com/go-viper/mapstructure/v2 v2.4.0 // indirect
	github.com/hashicorp/consul/api v1.34.0 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-hclog v1.5.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/hashicorp/go-rootcerts v1.0.2 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	github.com/hashicorp/serf v0.10.1 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mitchellh/go-homedir v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rmqha/rmqha/libs/obs v0.0.0 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/exp v0.0.0-20260218203240-3dfff04db8fa // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/rmqha/rmqha/libs/acl v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/commitlog v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/discovery v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/hawire v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/metasync v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/props v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/remoting v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/tlsconf v0.0.0 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace (
	github.com/rmqha/rmqha/libs/broker => ../../libs/broker
	github.com/rmqha/rmqha/libs/commitlog => ../../libs/commitlog
	github.com/rmqha/rmqha/libs/hawire => ../../libs/hawire
	github.com/rmqha/rmqha/libs/props => ../../libs/props
	github.com/rmqha/rmqha/libs/remoting => ../../libs/remoting
)

replace github.com/rmqha/rmqha/libs/discovery => ../../libs/discovery

replace github.com/rmqha/rmqha/libs/metasync => ../../libs/metasync

replace github.com/rmqha/rmqha/libs/obs => ../../libs/obs

replace github.com/rmqha/rmqha/libs/tlsconf => ../../libs/tlsconf

replace github.com/rmqha/rmqha/libs/acl => ../../libs/acl

require (
	github.com/rmqha/rmqha/libs/failover v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/filter v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/meta v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/route v0.0.0 // indirect
)

replace github.com/rmqha/rmqha/libs/filter => ../../libs/filter

replace github.com/rmqha/rmqha/libs/route => ../../libs/route

replace github.com/rmqha/rmqha/libs/meta => ../../libs/meta

replace github.com/rmqha/rmqha/libs/failover => ../../libs/failover

require github.com/rmqha/rmqha/libs/quietsock v0.0.0 // indirect

replace github.com/rmqha/rmqha/libs/quietsock => ../../libs/quietsock
