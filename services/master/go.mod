module github.com/rmqha/rmqha/services/master

go 1.26

require github.com/rmqha/rmqha/libs/broker v0.0.0

require (
	github.com/rmqha/rmqha/libs/commitlog v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/hawire v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/props v0.0.0 // indirect
	github.com/rmqha/rmqha/libs/remoting v0.0.0 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	golang.org/x/sys v0.13.0 // indirect
)

replace (
	github.com/rmqha/rmqha/libs/broker => ../../libs/broker
	github.com/rmqha/rmqha/libs/commitlog => ../../libs/commitlog
	github.com/rmqha/rmqha/libs/hawire => ../../libs/hawire
	github.com/rmqha/rmqha/libs/props => ../../libs/props
	github.com/rmqha/rmqha/libs/remoting => ../../libs/remoting
)
