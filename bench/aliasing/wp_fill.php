<?php
// Fill bench_canonical's WordPress with posts (bench/aliasing/wordpress.py writes the JSON).
//
//   php wp_fill.php posts.json http://127.0.0.1:8081 [simhashbench] > truth.json
//
// The third argument names the site's /etc/wordpress/config-NAME.php (wordpress.sh's WP_CONFIG);
// the fill stops when that config is not the site at the given address, so that filling a
// second site never rewrites the first one's database.
//
// Installs WordPress if needed (pretty permalinks, the twentytwentyone theme, threaded
// comments), then replaces every post, page and comment with the JSON's posts (skipped when
// the same JSON was loaded last time), and prints each post's id and permalink: the ground
// truth of the site. In-content links are written as {{link:K:kind}} and resolved here, once
// post K has its id: the aliases authors paste (shortlinks, share links, no slash, ...).

$input = $argv[1];
$home = $argv[2];
$parts = parse_url($home);
$_SERVER['HTTP_HOST'] = $parts['host'] . ':' . $parts['port'];
$_SERVER['WORDPRESS_CONFIG'] = $argv[3] ?? 'simhashbench';  // the site's /etc/wordpress/config-NAME.php
$_SERVER['REQUEST_URI'] = '/';
define('WP_INSTALLING', true);
require '/usr/share/wordpress/wp-load.php';
if (!defined('WP_HOME') || WP_HOME !== rtrim($home, '/')) {
    fwrite(STDERR, "config-{$_SERVER['WORDPRESS_CONFIG']}.php is not the site at $home\n");
    exit(1);
}
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
require_once ABSPATH . 'wp-admin/includes/post.php';

$json = file_get_contents($input);
$corpus = json_decode($json, true);
$digest = md5($json . md5_file(__FILE__));  // new posts when either changes

if (!is_blog_installed()) {
    wp_install('The Harbour Herald', 'editor', 'editor@example.invalid', true, '', wp_generate_password());
}
update_option('template', 'twentytwentyone');
update_option('stylesheet', 'twentytwentyone');
update_option('posts_per_page', 10);
update_option('thread_comments', 1);
update_option('page_comments', 0);
update_option('default_comment_status', 'open');
update_option('comment_registration', 0);
update_option('show_on_front', 'posts');
update_option('blog_public', 1);
global $wp_rewrite;
$wp_rewrite->set_permalink_structure('/%year%/%monthnum%/%postname%/');

function resolve_link($ids, $k, $kind) {
    $id = $ids[$k];
    $url = get_permalink($id);
    switch ($kind) {
        case 'p': return home_url('/?p=' . $id);
        case 'utm': return $url . '?utm_source=newsletter&utm_medium=email&utm_campaign=weekly';
        case 'fbclid': return $url . '?fbclid=IwAR0' . md5("fb$id");
        case 'noslash': return rtrim($url, '/');
        case 'amp': return $url . '?amp=1';
        case 'print': return $url . '?print=1';
        case 'upper': return strtoupper(substr($url, 0, -1)) === '' ? $url : preg_replace_callback('#/([^/]+)/$#', function ($m) { return '/' . strtoupper($m[1]) . '/'; }, $url);
        default: return $url;
    }
}

if (get_option('simhash_bench_corpus') !== $digest) {
    foreach (get_posts(['post_type' => 'any', 'post_status' => 'any', 'numberposts' => -1]) as $old) {
        wp_delete_post($old->ID, true);
    }
    foreach (get_comments(['status' => 'all']) as $c) {
        wp_delete_comment($c->comment_ID, true);
    }
    $ids = [];
    foreach ($corpus['posts'] as $k => $post) {
        $terms = [];
        foreach ([$post['category']] as $name) {
            $term = term_exists($name, 'category') ?: wp_insert_term($name, 'category');
            $terms[] = (int) $term['term_id'];
        }
        $ids[$k] = wp_insert_post([
            'post_title' => $post['title'],
            'post_content' => '',
            'post_status' => 'publish',
            'post_author' => 1,
            'post_type' => $post['type'],
            'post_date' => $post['date'],
            'post_category' => $terms,
            'tags_input' => $post['tags'],
        ], true);
        if (is_wp_error($ids[$k])) { fwrite(STDERR, $ids[$k]->get_error_message() . "\n"); exit(1); }
    }
    foreach ($corpus['posts'] as $k => $post) {
        $content = preg_replace_callback('/\{\{link:(\d+):(\w+)\}\}/', function ($m) use ($ids) {
            return esc_url(resolve_link($ids, (int) $m[1], $m[2]));
        }, $post['content']);
        wp_update_post(['ID' => $ids[$k], 'post_content' => $content]);
        $parent = 0;
        foreach ($post['comments'] as $n => $comment) {
            $parent = wp_insert_comment([
                'comment_post_ID' => $ids[$k],
                'comment_author' => $comment['author'],
                'comment_author_email' => 'reader@example.invalid',
                'comment_content' => $comment['text'],
                'comment_approved' => 1,
                'comment_parent' => $comment['reply'] ? $parent : 0,
                'comment_date' => $post['date'],
            ]);
        }
    }
    update_option('simhash_bench_corpus', $digest);
}

// Rewrite rules built here (WP_INSTALLING) miss the category and tag bases: let the next
// web request build them.
delete_option('rewrite_rules');

$out = [];
foreach (get_posts(['post_type' => ['post', 'page'], 'post_status' => 'publish', 'numberposts' => -1,
                    'orderby' => 'ID', 'order' => 'ASC']) as $p) {
    $out[] = ['id' => $p->ID, 'type' => $p->post_type, 'title' => $p->post_title,
              'permalink' => get_permalink($p->ID)];
}
echo json_encode(['home' => home_url('/'), 'posts' => $out], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES), "\n";
