module github.com/rmqha/rmqha/libs/tlsconf

go 1.26.0

require (
	github.com/rmqha/rmqha/libs/props v0.0.0
	github.com/stretchr/testify v1.12.1
	github.com/youmark/pkcs8 v0.0.0-20240726163527-a2c0da244d78
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.57.0 // indirect
)

replace github.com/rmqha/rmqha/libs/props => ../props
