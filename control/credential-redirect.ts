export {
  checkCredentialRedirect,
  mayRedirectCredentials,
  type RedirectCheck,
} from '../protocol/credential-redirect.ts';
