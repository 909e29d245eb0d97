module workflow-manager/goworker

go 1.19

require (
	github.com/lib/pq v1.10.7
	github.com/rabbitmq/amqp091-go v1.5.0
)

// Built offline against Debian's packaged sources (apt-get install
// golang-github-rabbitmq-amqp091-go-dev golang-github-lib-pq-dev): no module proxy is needed
// and no third-party source is committed. (`go mod tidy` would try to fetch the libraries'
// test-only dependencies; `go build` and `go test` do not need them.)
replace github.com/rabbitmq/amqp091-go => /usr/share/gocode/src/github.com/rabbitmq/amqp091-go

replace github.com/lib/pq => /usr/share/gocode/src/github.com/lib/pq
