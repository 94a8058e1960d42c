module github.com/rmqha/rmqha/libs/meta

go 1.26.0

require github.com/rmqha/rmqha/libs/route v0.0.0

replace github.com/rmqha/rmqha/libs/route => ../route

require (
	github.com/rmqha/rmqha/libs/commitlog v0.0.0
	github.com/sirupsen/logrus v1.10.2
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.13.0 // indirect
)

replace github.com/rmqha/rmqha/libs/commitlog => ../commitlog
