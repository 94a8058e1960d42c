module github.com/rmqha/rmqha/libs/metasync

go 1.26.0

require (
	github.com/nats-io/nats-server/v2 v2.12.1
	github.com/nats-io/nats.go v1.55.0
	github.com/rmqha/rmqha/libs/commitlog v0.0.0
	github.com/rmqha/rmqha/libs/remoting v0.0.0
	github.com/sirupsen/logrus v1.10.2
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/antithesishq/antithesis-sdk-go v0.4.3-default-no-op // indirect
	github.com/google/go-tpm v0.9.6 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/minio/highwayhash v1.0.3 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/nats-io/jwt/v2 v2.8.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/time v0.14.0 // indirect
	golang.org/x/tools v0.42.0 // indirect
)

replace (
	github.com/rmqha/rmqha/libs/commitlog => ../commitlog
	github.com/rmqha/rmqha/libs/hawire => ../hawire
	github.com/rmqha/rmqha/libs/props => ../props
	github.com/rmqha/rmqha/libs/remoting => ../remoting
)

replace github.com/rmqha/rmqha/libs/acl => ../acl

require github.com/rmqha/rmqha/libs/route v0.0.0

replace github.com/rmqha/rmqha/libs/route => ../route

require github.com/rmqha/rmqha/libs/meta v0.0.0

replace github.com/rmqha/rmqha/libs/meta => ../meta

replace github.com/rmqha/rmqha/libs/failover => ../failover

require github.com/rmqha/rmqha/libs/quietsock v0.0.0 // indirect

replace github.com/rmqha/rmqha/libs/quietsock => ../quietsock
