#!/bin/sh
# A WordPress site for bench_canonical (issue 29), on loopback only: 127.0.0.1:${WP_PORT:-8081}.
#
# Debian's own packages (wordpress, the twentytwentyone theme, nginx, php-fpm), run by their
# own configuration under $WP_STATE (not the system's services, which stay untouched), and a
# MariaDB database at 127.0.0.1:3306 (root, no password). Idempotent: run it again to start
# what is not running; `wordpress.sh stop` stops what it started. The posts are filled by
# `python -m bench.aliasing.wordpress fill` (real articles from ../shared/data).
#
#   sh bench/aliasing/wordpress.sh            # install (once), configure, start
#   sh bench/aliasing/wordpress.sh stop
set -eu

WP_PORT=${WP_PORT:-8081}
WP_STATE=${WP_STATE:-/var/lib/simhash-bench-wp}
WP_DB=${WP_DB:-simhash_bench_wp}
CONFIG_NAME=${WP_CONFIG:-simhashbench}  # /etc/wordpress/config-$CONFIG_NAME.php, chosen by WORDPRESS_CONFIG

if [ "${1:-start}" = stop ]; then
    [ -f "$WP_STATE/nginx.pid" ] && kill "$(cat "$WP_STATE/nginx.pid")" 2>/dev/null || true
    [ -f "$WP_STATE/php-fpm.pid" ] && kill "$(cat "$WP_STATE/php-fpm.pid")" 2>/dev/null || true
    exit 0
fi

packages="wordpress wordpress-theme-twentytwentyone nginx php-fpm php-mysql"
missing=""
for p in $packages; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi

mkdir -p "$WP_STATE/logs"
chown www-data:www-data "$WP_STATE/logs"

mysql -h 127.0.0.1 -u root <<SQL
CREATE DATABASE IF NOT EXISTS $WP_DB CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS 'simhash_wp'@'127.0.0.1' IDENTIFIED BY 'simhash_wp';
CREATE USER IF NOT EXISTS 'simhash_wp'@'localhost' IDENTIFIED BY 'simhash_wp';
GRANT ALL ON $WP_DB.* TO 'simhash_wp'@'127.0.0.1';
GRANT ALL ON $WP_DB.* TO 'simhash_wp'@'localhost';
SQL

cat > /etc/wordpress/config-$CONFIG_NAME.php <<PHP
<?php
// bench_canonical's WordPress (bench/aliasing/wordpress.sh); loopback only.
define('DB_NAME', '$WP_DB');
define('DB_USER', 'simhash_wp');
define('DB_PASSWORD', 'simhash_wp');
define('DB_HOST', '127.0.0.1:3306');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
define('WP_HOME', 'http://127.0.0.1:$WP_PORT');
define('WP_SITEURL', 'http://127.0.0.1:$WP_PORT');
define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('DISABLE_WP_CRON', true);
foreach (['AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_KEY', 'NONCE_KEY', 'AUTH_SALT',
          'SECURE_AUTH_SALT', 'LOGGED_IN_SALT', 'NONCE_SALT'] as \$k) {
    define(\$k, 'simhash-bench-' . \$k);
}
\$table_prefix = 'wp_';
PHP

cat > "$WP_STATE/php-fpm.conf" <<FPM
[global]
pid = $WP_STATE/php-fpm.pid
error_log = $WP_STATE/logs/php-fpm.log
daemonize = yes

[simhashbench]
user = www-data
group = www-data
listen = $WP_STATE/php-fpm.sock
listen.owner = www-data
listen.group = www-data
pm = static
pm.max_children = 4
FPM

# Debian's fastcgi_params pass HTTP_HOST as $host, without the port: WordPress's canonical
# redirect then sends / to / for ever. Pass the Host header as the client sent it.
sed 's/^fastcgi_param  *HTTP_HOST .*/fastcgi_param HTTP_HOST $http_host;/' \
    /etc/nginx/fastcgi_params > "$WP_STATE/fastcgi_params"

cat > "$WP_STATE/nginx.conf" <<NGINX
user www-data;
worker_processes 1;
pid $WP_STATE/nginx.pid;
error_log $WP_STATE/logs/error.log;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    log_format bench '\$msec\t\$status\t\$request_method\t\$request_uri\t\$http_user_agent';
    access_log $WP_STATE/logs/access.log bench;
    client_body_temp_path $WP_STATE/body;
    fastcgi_temp_path $WP_STATE/fastcgi;
    proxy_temp_path $WP_STATE/proxy;
    uwsgi_temp_path $WP_STATE/uwsgi;
    scgi_temp_path $WP_STATE/scgi;
    server {
        listen 127.0.0.1:$WP_PORT;
        server_name 127.0.0.1;
        root /usr/share/wordpress;
        index index.php;
        location / { try_files \$uri \$uri/ /index.php?\$args; }
        location ~ ^/wp-content/(.*)\$ { alias /var/lib/wordpress/wp-content/\$1; }
        location ~ \.php\$ {
            include $WP_STATE/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME \$request_filename;
            fastcgi_param WORDPRESS_CONFIG $CONFIG_NAME;
            fastcgi_pass unix:$WP_STATE/php-fpm.sock;
        }
    }
}
NGINX

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
running "$WP_STATE/php-fpm.pid" || /usr/sbin/php-fpm8.2 -y "$WP_STATE/php-fpm.conf"
if running "$WP_STATE/nginx.pid"; then
    /usr/sbin/nginx -c "$WP_STATE/nginx.conf" -s reload
else
    /usr/sbin/nginx -c "$WP_STATE/nginx.conf"
fi
echo "WordPress at http://127.0.0.1:$WP_PORT/ (access log $WP_STATE/logs/access.log)"
