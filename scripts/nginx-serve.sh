#!/usr/bin/env bash
# Serves DOCROOT on 127.0.0.1:PORT with nginx in the foreground, from a config
# generated into WORKDIR (logs, pid and temp folders live there too).
# Used by the test harness and by `make run`; nothing is written outside WORKDIR.
#
#   scripts/nginx-serve.sh DOCROOT WORKDIR PORT [TLS_PORT]
#
# With TLS_PORT, the same site is also served over TLS with HTTP/2 on that port,
# using WORKDIR/tls.crt and WORKDIR/tls.key (the caller makes them).
#
# Besides the files, a few fixed routes exercise redirects and errors:
#   /moved/NAME      301 to /NAME          /loop         302 to itself
#   /to-file         302 to file:///etc/passwd
#   /to-data         302 to a data: URL
#   /status/CODE     that status (400 401 403 404 408 410 429 500 502 503 504)
#   /fake.png        page.html served as image/png
#   /negotiated      formats/still.avif to a request whose Accept names
#                    image/avif, else photo.jpg; with Vary: Accept
#   /store/...       a WebDAV store (GET PUT DELETE) kept in WORKDIR/dav, for
#                    imgcache's remote tier; /private-store/... the same store,
#                    answering only requests with "Authorization: Bearer fleet-token"
# The access log records "$request_uri $status $connection $server_protocol
# $http_user_agent|$http_accept|$http_if_none_match": $connection is the TCP
# connection's serial number, so reuse shows as repeated numbers.
set -euo pipefail
docroot=$(cd "$1" && pwd)
workdir=$2
port=$3
tls_port=${4:-}
mkdir -p "$workdir/temp" "$workdir/dav"
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
# As root, nginx would hand requests to a 'nobody' worker; master_process off keeps one process.
cat > "$workdir/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $workdir/nginx.pid;
error_log $workdir/error.log warn;
events { worker_connections 512; }
http {
    types {
        image/jpeg jpg jpeg;
        image/png png;
        image/gif gif;
        image/webp webp;
        image/tiff tif tiff;
        image/avif avif;
        image/heic heic;
        image/jxl jxl;
        image/bmp bmp;
        image/x-icon ico;
        image/svg+xml svg;
        text/html html;
        text/plain txt;
    }
    default_type application/octet-stream;
    log_format imgcache '\$request_uri \$status \$connection \$server_protocol \$http_user_agent|\$http_accept|\$http_if_none_match';
    access_log $workdir/access.log imgcache;
    client_body_temp_path $workdir/temp/body;
    proxy_temp_path $workdir/temp/proxy;
    fastcgi_temp_path $workdir/temp/fastcgi;
    uwsgi_temp_path $workdir/temp/uwsgi;
    scgi_temp_path $workdir/temp/scgi;
    sendfile on;
    keepalive_timeout 30;
    keepalive_requests 100000;
    etag on;
    map \$http_accept \$negotiated {
        ~image/avif /formats/still.avif;
        default /photo.jpg;
    }
    server {
        listen 127.0.0.1:$port;
$(if [ -n "$tls_port" ]; then
    echo "        listen 127.0.0.1:$tls_port ssl http2;"
    echo "        ssl_certificate $workdir/tls.crt;"
    echo "        ssl_certificate_key $workdir/tls.key;"
fi)
        root $docroot;
        location ~ ^/moved/(.*)\$ { return 301 /\$1; }
        location = /loop { return 302 /loop; }
        location = /to-file { return 302 file:///etc/passwd; }
        location = /to-data { return 302 "data:image/png;base64,iVBORw0KGgo="; }
$(for code in 400 401 403 404 408 410 429 500 502 503 504; do echo "        location = /status/$code { return $code; }"; done)
        location = /fake.png { default_type image/png; alias $docroot/page.html; }
        location = /negotiated { add_header Vary Accept; try_files \$negotiated =404; }
        location /store/ {
            root $workdir/dav;
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 64m;
        }
        location /datasets/ {
            root $workdir/dav;
            dav_methods PUT DELETE MKCOL MOVE;
            create_full_put_path on;
            client_max_body_size 1g;
        }
        location /private-store/ {
            if (\$http_authorization != "Bearer fleet-token") { return 401; }
            alias $workdir/dav/store/;
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 64m;
        }
    }
}
CONF
exec "$nginx_bin" -p "$workdir" -c "$workdir/nginx.conf" -e "$workdir/error.log"
