module github.com/rmqha/rmqha/tools

go 1.26.0

require (
	github.com/apache/rocketmq-client-go/v2 v2.1.3-0.20251226070945-2173d070fd1b
	github.com/hashicorp/consul/api v1.34.0
	github.com/nats-io/nats-server/v2 v2.12.1
	github.com/nats-io/nats.go v1.55.0
	github.com/rmqha/rmqha/libs/acl v0.0.0
	github.com/rmqha/rmqha/libs/discovery v0.0.0
	github.com/rmqha/rmqha/libs/hawire v0.0.0
	github.com/rmqha/rmqha/libs/remoting v0.0.0
	github.com/sirupsen/logrus v1.10.2
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.4.3-default-no-op // indirect
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/emirpasic/gods v1.12.0 // indirect
	github.com/fatih/color v1.16.0 // indirect
	github.com/go-viper/mapstructure/v2 v2.4.0 // indirect
	github.com/golang/mock v1.3.1 // indirect
	github.com/google/go-tpm v0.9.6 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/errwrap v1.1.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-hclog v1.5.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/hashicorp/go-rootcerts v1.0.2 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	github.com/hashicorp/serf v0.10.1 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/mattn/go-colorable v0.1.13 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/minio/highwayhash v1.0.3 // indirect
	github.com/mitchellh/go-homedir v1.1.0 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
	github.com/nats-io/jwt/v2 v2.8.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/patrickmn/go-cache v2.1.0+incompatible // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rmqha/rmqha/libs/commitlog v0.0.0
	github.com/tidwall/gjson v1.13.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.0 // indirect
	go.uber.org/atomic v1.5.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/exp v0.0.0-20260218203240-3dfff04db8fa // indirect
	golang.org/x/lint v0.0.0-20190930215403-16217165b5de // indirect
	golang.org/x/sys v0.48.0
	golang.org/x/time v0.14.0 // indirect
	golang.org/x/tools v0.42.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.0.0 // indirect
	stathat.com/c/consistent v1.0.0 // indirect
)

replace github.com/rmqha/rmqha/libs/remoting => ../libs/remoting

replace github.com/rmqha/rmqha/libs/commitlog => ../libs/commitlog

replace github.com/rmqha/rmqha/libs/hawire => ../libs/hawire

replace github.com/rmqha/rmqha/libs/props => ../libs/props

replace github.com/rmqha/rmqha/libs/discovery => ../libs/discovery

require github.com/rmqha/rmqha/libs/tlsconf v0.0.0

require github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78 // indirect

replace github.com/rmqha/rmqha/libs/tlsconf => ../libs/tlsconf

replace github.com/rmqha/rmqha/libs/acl => ../libs/acl

require github.com/rmqha/rmqha/libs/route v0.0.0

replace github.com/rmqha/rmqha/libs/route => ../libs/route

require github.com/rmqha/rmqha/libs/meta v0.0.0

replace github.com/rmqha/rmqha/libs/meta => ../libs/meta

require (
	github.com/rmqha/rmqha/libs/failover v0.0.0
	github.com/rmqha/rmqha/libs/props v0.0.0
)

replace github.com/rmqha/rmqha/libs/failover => ../libs/failover

require (
	github.com/rmqha/rmqha/libs/broker v0.0.0
	github.com/rmqha/rmqha/libs/filter v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/obs v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/quietsock v0.0.0 // indirect
)

replace github.com/rmqha/rmqha/libs/quietsock => ../libs/quietsock

replace github.com/rmqha/rmqha/libs/broker => ../libs/broker

replace github.com/rmqha/rmqha/libs/metasync => ../libs/metasync

replace github.com/rmqha/rmqha/libs/obs => ../libs/obs

replace github.com/rmqha/rmqha/libs/filter => ../libs/filter
