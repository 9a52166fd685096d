// GET /External/Hello: a stand-in, so that the manifests serve something as they are. Put your controllers
// in this folder (or your overlay's) and list each file in kustomization.yaml's configMapGenerator.
export default () => ({ hello: 'world' });
