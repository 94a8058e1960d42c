module github.com/rmqha/rmqha/libs/hawire

go 1.26

require (
	github.com/rmqha/rmqha/libs/quietsock v0.0.0
	github.com/sirupsen/logrus v1.10.2
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.13.0 // indirect
)

replace github.com/rmqha/rmqha/libs/quietsock => ../quietsock
