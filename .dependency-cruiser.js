// The import rules `npm run lint` keeps (docs/design.md, "Where the code is"): no circle, types included; proxy
// and host never import each other; the product never imports tests, the bench or their tools; and within proxy/
// and host/ a folder imports only the layers below it.
/** Folders of proxy/, top layer first: a folder may import its own layer and those below, never above. */
const PROXY_LAYERS = [['roles'], ['server'], ['passes'], ['observe', 'forward', 'static'], ['core']];
/** Folders of host/, top layer first. */
const HOST_LAYERS = [['pool', 'worker'], ['controller'], ['wire']];
/** Folders of one layer that may not import the other: [importer, imported]. observe/ may read forward/'s upstreams. */
const APART = [
  ['proxy/forward', 'proxy/observe'],
  ['proxy/forward', 'proxy/static'],
  ['proxy/static', 'proxy/observe'],
  ['proxy/static', 'proxy/forward'],
  ['host/pool', 'host/worker'],
  ['host/worker', 'host/pool'],
];

/** One rule per layer: its folders may not import a folder of a layer above. */
function layerRules(root, layers) {
  return layers.slice(1).map((layer, index) => {
    const above = layers.slice(0, index + 1).flat();
    return {
      name: `${root}-${layer.join('-')}-upward`,
      comment: `${root}/{${layer.join(',')}} is below ${above.map((folder) => `${root}/${folder}`).join(', ')}: it may not import them`,
      severity: 'error',
      from: { path: `^${root}/(${layer.join('|')})/` },
      to: { path: `^${root}/(${above.join('|')})/` },
    };
  });
}

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import circle (type-only imports count): one of its files must give up the import',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'proxy-host-apart',
      comment: 'proxy/ and host/ are separate programs that share only common/',
      severity: 'error',
      from: { path: '^(proxy|host)/' },
      to: { path: '^(proxy|host)/', pathNot: '^$1/' },
    },
    {
      name: 'common-below-roles',
      comment: 'common/ is shared by the proxy, the host and the launcher: it imports none of them',
      severity: 'error',
      from: { path: '^common/' },
      to: { path: '^(proxy|host|launcher)/' },
    },
    {
      name: 'product-not-tests',
      comment: 'The product never imports tests, the bench or their tools',
      severity: 'error',
      from: { path: '^(proxy|host|common|launcher|bin)/' },
      to: { path: '^(test|bench|tools)/' },
    },
    {
      name: 'bench-not-tests',
      comment: 'The bench never imports tests',
      severity: 'error',
      from: { path: '^(bench|tools)/' },
      to: { path: '^test/' },
    },
    ...APART.map(([from, to]) => ({
      name: `${from.replace('/', '-')}-not-${to.split('/')[1]}`,
      comment: `${from}/ and ${to}/ share a layer but not code: what both need belongs a layer below`,
      severity: 'error',
      from: { path: `^${from}/` },
      to: { path: `^${to}/` },
    })),
    ...layerRules('proxy', PROXY_LAYERS),
    ...layerRules('host', HOST_LAYERS),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(build|node_modules|reports|logs)/' },
    // Type-only imports are dependencies too: a circle through a type still ties two files together.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
